"""Which acknowledgements count: Recall's own, or a trusted author's, and none longer than the config allows.

An acknowledgement silences a finding, so whoever can write one can turn a
failing scan into a passing one.  The local file lives in the owner-only home,
written by ``recall ack`` on this machine; a document in the graph can be
published by anyone DataHub lets write documents.  Recall therefore signs each
acknowledgement it publishes (HMAC-SHA256 over its record) with a key every
instance on one graph shares (``acknowledgements.key_env``; unset, this home's
own key), and honours a document from the graph when that signature checks or
when DataHub records it as written by an author ``acknowledgements.trusted_authors``
names.  Every other one is ignored, and said to be, with why: a scan that
quietly dropped one would hide a forgery and an honest mistake alike.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass
from typing import Callable, Iterable

from recall_dagster.acks.model import Acknowledgement
from recall_dagster.contracts import scan as contract
from recall_dagster.detect.config import AckPolicy

DAY_MS = 86_400_000
CORPUSER = "urn:li:corpuser:"


def signature(ack: Acknowledgement, key: bytes) -> str:
    """What Recall's identity signs: the record as stored, keys sorted, so any edit to it breaks the match."""
    record = json.dumps(ack.to_json(), sort_keys=True, separators=(",", ":")).encode()
    return hmac.new(key, record, hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class Published:
    """An acknowledgement as a document in the graph carries it, with what says who wrote it."""

    ack: Acknowledgement
    signature: str | None  # Recall's, when Recall published it
    author: str | None  # the actor DataHub records as the document's last writer


@dataclass(frozen=True)
class Ignored:
    """An acknowledgement read but not honoured, and why."""

    ack: Acknowledgement
    why: str

    def contract(self) -> contract.IgnoredAcknowledgement:
        return contract.IgnoredAcknowledgement(id=self.ack.id, detector=self.ack.detector, subject=self.ack.subject,
                                               by=self.ack.by, why=self.why)


@dataclass(frozen=True)
class AckBook:
    """The acknowledgements a command honours, and those it read and set aside."""

    honoured: tuple[Acknowledgement, ...] = ()
    ignored: tuple[Ignored, ...] = ()


def too_long(ack: Acknowledgement, policy: AckPolicy) -> str | None:
    """Why ``ack`` lasts longer than the config allows, or None."""
    days = (ack.until_ms - ack.created_ms) / DAY_MS
    if days <= policy.max_days:
        return None
    return f"lasts {days:,.0f} days, longer than acknowledgements.max_days ({policy.max_days})"


def _trusted_author(author: str | None, policy: AckPolicy) -> bool:
    if not author:
        return False
    names = {author, author.removeprefix(CORPUSER)}
    return any(t in names or t.removeprefix(CORPUSER) in names for t in policy.trusted_authors)


def _untrusted(doc: Published, policy: AckPolicy, key: Callable[[], bytes]) -> str | None:
    """Why a document from the graph does not speak for Recall or a trusted author, or None."""
    if doc.signature is not None and hmac.compare_digest(doc.signature, signature(doc.ack, key())):
        return None
    if _trusted_author(doc.author, policy):
        return None
    signed = ("its signature does not match this instance's key "
              f"(set {policy.key_env} alike on every instance that shares the graph)" if doc.signature
              else "it carries no signature of Recall's")
    return (f"{signed}, and its author {doc.author or '(none recorded)'} is not in "
            "acknowledgements.trusted_authors")


def sorted_out(
    local: Iterable[Acknowledgement], published: Iterable[Published], revoked: frozenset[str], policy: AckPolicy,
    key: Callable[[], bytes],
) -> AckBook:
    """Every acknowledgement once, by id (this home's copy first), less the revoked: each honoured, or ignored
    with why.  ``key`` is asked for only when a document carries a signature to check."""
    seen: dict[str, Acknowledgement] = {}
    ignored: dict[str, Ignored] = {}
    for ack in local:
        seen.setdefault(ack.id, ack)
    for doc in published:
        if doc.ack.id in seen or doc.ack.id in ignored:
            continue
        why = _untrusted(doc, policy, key)
        if why is None:
            seen[doc.ack.id] = doc.ack
        else:
            ignored[doc.ack.id] = Ignored(doc.ack, why)
    honoured = []
    for ack_id in sorted(seen):
        ack = seen[ack_id]
        if ack_id in revoked:
            continue
        why = too_long(ack, policy)
        if why is None:
            honoured.append(ack)
        else:
            ignored[ack_id] = Ignored(ack, why)
    return AckBook(tuple(honoured), tuple(ignored[k] for k in sorted(ignored) if k not in revoked))
