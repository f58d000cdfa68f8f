"""Where acknowledgements live: a JSON file under RECALL_HOME first, then a document in DataHub.

The local file is the record this instance keeps (written before anything is
sent, so a graph that is down loses nothing); the DataHub document is how
another instance, a Dagster gate or a person browsing the model learns of it.
A scan honours both.  Revoking unpublishes the document (kept, with who
revoked it, for the history) and drops the local record.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from datahub.metadata.schema_classes import DocumentInfoClass, DocumentStateClass, DocumentStatusClass
from datahub.metadata.urns import DocumentUrn

from recall_dagster.acks.model import Acknowledgement
from recall_dagster.acks.trust import Published, signature
from recall_dagster.errors import ConfigError
from recall_dagster.estate import display_name
from recall_dagster.estate.marks import MANAGED_BY_KEY
from recall_dagster.files import read_json_object, update_json
from recall_dagster.graph.port import MetadataGraph
from recall_dagster.instants import iso_instant
from recall_dagster.writeback.config import RetryPolicy
from recall_dagster.writeback.direct import write_changed
from recall_dagster.writeback.documents import recall_document
from recall_dagster.writeback.state import GraphState
from recall_dagster.writeback.writes import Write
from recall_dagster.markdown import md_text

MARK = "recall-ack"
RECORD_KEY = "recall.acknowledgement"  # the document's custom property holding the acknowledgement as JSON
SIGNATURE_KEY = "recall.signature"  # and the one holding Recall's signature of it (acks/trust.py)
FILE = "acknowledgements.json"


class LocalAcks:
    """``<state_dir>/acknowledgements.json``: ``{"acknowledgements": [...]}``, replaced atomically under its
    lock, so an ``ack`` and a ``revoke`` at once each keep the other's change."""

    def __init__(self, state_dir: str | Path) -> None:
        self.path = Path(state_dir) / FILE

    def load(self) -> tuple[Acknowledgement, ...]:
        return self._parsed(read_json_object(self.path, "acknowledgements"))

    def _parsed(self, data: dict[str, Any]) -> tuple[Acknowledgement, ...]:
        try:
            return tuple(Acknowledgement.from_json(a) for a in data.get("acknowledgements", ()))
        except ValueError as err:
            raise ConfigError(f"{self.path}: {err}; fix or remove the entry (recall ack list shows the rest)") from None

    def update(self, change: Callable[[tuple[Acknowledgement, ...]], Iterable[Acknowledgement]]) -> None:
        """Replace the acknowledgements held with ``change`` of the latest ones."""

        def body(data: dict[str, Any]) -> dict[str, Any]:
            acks = change(self._parsed(data))
            return {"acknowledgements": [a.to_json() for a in sorted(acks, key=lambda a: a.id)]}

        update_json(self.path, body, "acknowledgements")


def document_urn(ack_id: str) -> str:
    """Named by the acknowledgement, so a scan reads these documents alone, not every document in the graph."""
    return DocumentUrn(f"{MARK}-{ack_id}").urn()


def _markdown(ack: Acknowledgement) -> str:
    scope = f"on {ack.model}" if ack.model else "on every model it reaches"
    return (
        f"# Acknowledged: {ack.detector} on {md_text(display_name(ack.subject))}\n\n"
        f"{md_text(ack.by)} accepted this finding {md_text(scope)} until {iso_instant(ack.until_ms)}.\n\n"
        f"Reason: {md_text(ack.reason)}\n\n"
        "Recall leaves it out of the model's score while its evidence stays as it was; "
        "a change in that evidence is a new finding.\n"
    )


def _document(ack: Acknowledgement, key: bytes, state: GraphState, now_ms: int,
              revoked_by: str | None = None) -> Write:
    urn = document_urn(ack.id)
    related = [ack.subject]
    record = {MANAGED_BY_KEY: MARK, RECORD_KEY: json.dumps(ack.to_json(), sort_keys=True),
              SIGNATURE_KEY: signature(ack, key)}
    info = recall_document(
        f"Acknowledged: {ack.detector} on {display_name(ack.subject)} until {iso_instant(ack.until_ms)[:10]}",
        _markdown(ack) + (f"\nRevoked by {revoked_by}.\n" if revoked_by else ""),
        f"{MARK}:{ack.id}", related, record, state.aspect(urn, DocumentInfoClass), now_ms,
    )
    if revoked_by:
        info.status = DocumentStatusClass(state=DocumentStateClass.UNPUBLISHED)
    return Write.of("document", urn, info, info.title or urn)


def publish(
    graph: MetadataGraph, acks: Sequence[Acknowledgement], key: bytes, policy: RetryPolicy, now_ms: int,
    revoked_by: str | None = None, sleep: Callable[[float], None] = time.sleep,
) -> tuple[int, list[str]]:
    """Each acknowledgement's document, signed with ``key``, published (or, given ``revoked_by``, unpublished);
    what changed only."""
    urns = [document_urn(a.id) for a in acks]
    return write_changed(
        graph, urns, (DocumentInfoClass,),
        lambda state: [_document(a, key, state, now_ms, revoked_by) for a in acks], policy, sleep,
    )


def read_published(graph: MetadataGraph) -> tuple[tuple[Published, ...], frozenset[str]]:
    """Every acknowledgement a published Recall document in the graph carries, with its signature and author
    (whether it counts is :mod:`recall_dagster.acks.trust`'s to say), and the ids of those revoked (their
    documents unpublished): a revocation anywhere outweighs a copy kept here, as it can only show a finding."""
    prefix = document_urn("")
    urns = [u for u in graph.list_urns("document") if u.startswith(prefix)]
    infos = graph.get_aspects(urns, [DocumentInfoClass]) if urns else {}
    found, revoked = [], set()
    for urn in urns:
        info = infos.get(urn, {}).get(DocumentInfoClass.ASPECT_NAME)
        if not isinstance(info, DocumentInfoClass) or (info.customProperties or {}).get(MANAGED_BY_KEY) != MARK:
            continue
        try:
            ack = Acknowledgement.from_json(json.loads(info.customProperties[RECORD_KEY]))
        except (KeyError, ValueError):
            continue  # a document someone edited by hand is not an acknowledgement Recall can honour
        if info.status and info.status.state == DocumentStateClass.UNPUBLISHED:
            revoked.add(ack.id)
        else:
            written = info.lastModified or info.created
            found.append(Published(ack, info.customProperties.get(SIGNATURE_KEY), written.actor if written else None))
    return tuple(found), frozenset(revoked)
