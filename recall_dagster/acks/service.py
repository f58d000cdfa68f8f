"""``recall ack``: accept a current finding until a date, list what is accepted, revoke it.

An acknowledgement is made from the finding as the graph shows it now: the
detectors run on the selected models (no measurement, no schema baseline
recorded), the findings the request names are found, and their evidence's
fingerprints are what is accepted.  Asking for a finding that is not there is a
usage error listing what is, never an acknowledgement of nothing.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from dataclasses import dataclass

from recall_dagster.acks.model import Acknowledgement, fingerprint, merged
from recall_dagster.acks.store import LocalAcks, publish, read_published
from recall_dagster.acks.trust import DAY_MS, AckBook, sorted_out
from recall_dagster.contracts import acks as contract
from recall_dagster.contracts.base import VERSION
from recall_dagster.detect.config import AckPolicy
from recall_dagster.instants import iso_instant
from recall_dagster.pickles import Signer
from recall_dagster.detect import ScanConfig
from recall_dagster.detect.finding import Finding
from recall_dagster.errors import ConfigError
from recall_dagster.estate import ModelClosure, display_name
from recall_dagster.graph.port import MetadataGraph
from recall_dagster.kept.baselines import JsonStateStore
from recall_dagster.scan import judged, select_closures
from recall_dagster.settings import Settings
from recall_dagster.writeback.config import RetryPolicy
from recall_dagster.estate.naming import model_name


@dataclass(frozen=True)
class AckRequest:
    detector: str
    subject: str  # a URN, a name (``raw.transactions``) or the dataset a finding is caused by
    model: str | None
    reason: str
    until_ms: int
    by: str


def who() -> str:
    """Who is acknowledging, when ``--by`` does not say: RECALL_USER, else the login name."""
    return os.environ.get("RECALL_USER") or os.environ.get("USER") or os.environ.get("USERNAME") or "unknown"


def signing_key(settings: Settings, policy: AckPolicy) -> bytes:
    """The key every instance on one graph shares (from ``policy.key_env``), else this home's own."""
    shared = os.environ.get(policy.key_env)
    if shared:
        return shared.encode()
    return hmac.new(Signer(settings.state_dir).key, b"recall acknowledgements", hashlib.sha256).digest()


def in_force(graph: MetadataGraph, settings: Settings, policy: AckPolicy) -> AckBook:
    """This instance's acknowledgements and those published to the graph by Recall or a trusted author, less any
    revoked or lasting longer than the config allows; the rest set aside with why."""
    published, revoked = read_published(graph)
    return sorted_out(LocalAcks(settings.state_dir).load(), published, revoked, policy,
                      lambda: signing_key(settings, policy))


def _current(
    graph: MetadataGraph, settings: Settings, config: ScanConfig, request: AckRequest, now_ms: int
) -> list[tuple[ModelClosure, Finding]]:
    # a named registered model means every version of it: one a retrain has not yet put in production included
    closures = select_closures(graph, config, include_all=request.model is not None,
                               models=[request.model] if request.model else ())
    detection = judged(closures, config, JsonStateStore(settings.state_dir).load_baselines(), at_ms=now_ms)
    of_detector = [(c, f) for c in closures for f in detection.findings.get(c.urn, ()) if f.detector == request.detector]
    matched = [(c, f) for c, f in of_detector if f.about(c, request.subject)]
    if not matched:
        seen = sorted({display_name(f.subject) for _, f in of_detector})
        raise ConfigError(
            f"no current {request.detector} finding on {request.subject}"
            + (f" for {request.model}" if request.model else "")
            + (f"; it is on: {', '.join(seen)}" if seen else f"; {request.detector} finds nothing now")
        )
    subjects = sorted({f.subject for _, f in matched})
    if len(subjects) > 1:
        raise ConfigError(f"{request.subject!r} names several subjects ({', '.join(subjects)}): give its URN")
    return matched


def _scope(matched: tuple[ModelClosure, Finding], model: str | None) -> str:
    """The subject to acknowledge: a finding on a version itself is accepted for its registered model unless
    one version was named, so the next retrain's version does not bring the same finding back."""
    closure, f = matched
    one_version = model is not None and model_name(model).one_version
    return closure.registered_model if f.subject == closure.urn and not one_version else f.subject


def acknowledge(
    graph: MetadataGraph, settings: Settings, config: ScanConfig, request: AckRequest, now_ms: int,
    retry: RetryPolicy, write: bool = True,
) -> tuple[Acknowledgement, int, list[str]]:
    """The acknowledgement, on disk first, then published; with the writes that landed and those that did not."""
    if request.until_ms <= now_ms:
        raise ConfigError("--until must lie in the future: an acknowledgement that has expired accepts nothing")
    policy = config.acknowledgements
    if request.until_ms - now_ms > policy.max_days * DAY_MS:
        raise ConfigError(f"--until {iso_instant(request.until_ms)[:10]} lies more than {policy.max_days} days ahead, "
                          "longer than acknowledgements.max_days allows: acknowledge again when it ends")
    if not request.reason.strip():
        raise ConfigError("--reason must say why the finding is accepted")
    matched = _current(graph, settings, config, request, now_ms)
    ack = Acknowledgement.make(
        request.detector, _scope(matched[0], request.model), request.model, (fingerprint(f) for _, f in matched),
        request.reason.strip(), request.by, now_ms, request.until_ms,
    )
    LocalAcks(settings.state_dir).update(lambda held: merged([ack], held))
    if not write:
        return ack, 0, []
    landed, failures = publish(graph, [ack], signing_key(settings, policy), retry, now_ms)
    return ack, landed, failures


def revoke(
    graph: MetadataGraph, settings: Settings, ack_id: str, by: str, now_ms: int, policy: AckPolicy,
    retry: RetryPolicy, write: bool = True,
) -> tuple[Acknowledgement, int, list[str]]:
    """Drop the acknowledgement here and unpublish its document (any, trusted or not: a revocation can only
    bring a finding back); an unknown id lists the known ones."""
    local = LocalAcks(settings.state_dir)
    known = merged(local.load(), (p.ack for p in read_published(graph)[0]))
    ack = next((a for a in known if a.id == ack_id), None)
    if ack is None:
        ids = ", ".join(a.id for a in known) or "none"
        raise ConfigError(f"no acknowledgement {ack_id!r}; known: {ids}")
    local.update(lambda held: (a for a in held if a.id != ack_id))
    if not write:
        return ack, 0, []
    landed, failures = publish(graph, [ack], signing_key(settings, policy), retry, now_ms, revoked_by=by)
    return ack, landed, failures


def listing(book: AckBook, now_ms: int) -> contract.AckList:
    """Every acknowledgement with whether it is in force now; one set aside says why (``ignored``)."""
    rows = [contract.ListedAck(**a.to_json(), in_force=a.created_ms <= now_ms < a.until_ms, ignored=None)
            for a in book.honoured]
    rows += [contract.ListedAck(**i.ack.to_json(), in_force=False, ignored=i.why) for i in book.ignored]
    return contract.AckList(schema_version=VERSION, acknowledgements=sorted(rows, key=lambda r: r.id))
