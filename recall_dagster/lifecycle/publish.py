"""What DataHub and RECALL_HOME get from the lifecycle: incidents, postmortem documents, evidence files.

The aspects are built here from the ledger entry alone (its snapshot holds the
root cause as last seen), so they are reproducible, and sent through the
write-back's :func:`~recall_dagster.writeback.emit.emit`, which retries what
failed: only ``writeback/`` writes.  Both carry marks of their own, apart
from the scan write-back's (``recall:`` incident types, ``recall-dagster``
documents), whose stand-down would otherwise close them.  A server that
refuses mlModel targets on incidents (DataHub before PR #19112) gets the
incident on the failing datasets alone, with the models named in its text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from datahub.emitter.mce_builder import datahub_guid
from datahub.metadata.schema_classes import (
    DocumentContentsClass,
    DocumentInfoClass,
    DocumentSourceClass,
    DocumentSourceTypeClass,
    DocumentStateClass,
    DocumentStatusClass,
    IncidentInfoClass,
    IncidentSourceClass,
    IncidentSourceTypeClass,
    IncidentStageClass,
    IncidentStateClass,
    IncidentStatusClass,
    IncidentTypeClass,
    RelatedAssetClass,
)
from datahub.metadata.urns import DocumentUrn

from recall_dagster.estate.marks import MANAGED_BY_KEY
from recall_dagster.graph.port import MetadataGraph, aspect_of
from recall_dagster.lifecycle.blast import describe
from recall_dagster.lifecycle.config import LifecycleConfig
from recall_dagster.lifecycle.incidents import INCIDENT_TYPE, IncidentEntry
from recall_dagster.estate.measures import weight_text
from recall_dagster.lifecycle.postmortem import Postmortem
from recall_dagster.writeback.config import RetryPolicy
from recall_dagster.writeback.emit import emit
from recall_dagster.writeback.incidents import targets_models
from recall_dagster.writeback.run import INCIDENTS_ON_MODELS
from recall_dagster.writeback.store import WritebackStore
from recall_dagster.writeback.keys import stamp
from recall_dagster.writeback.writes import Write
from recall_dagster.files import write_record
from recall_dagster.markdown import md_text
from recall_dagster.shown import shown
from recall_dagster.narrate import trained_version

MANAGED_BY = {MANAGED_BY_KEY: "recall-lifecycle"}


def _datasets(entry: IncidentEntry) -> list[str]:
    return list(dict.fromkeys(a["dataset"] for a in entry.snapshot.get("assertions", ())))


def _models(entry: IncidentEntry) -> list[str]:
    return list(dict.fromkeys(m["urn"] for m in entry.snapshot.get("blast_radius", {}).get("models", ())))


def incident_description(entry: IncidentEntry) -> str:
    snapshot = entry.snapshot
    failing = [a for a in snapshot.get("assertions", ()) if a.get("failing")] or list(snapshot.get("assertions", ()))
    tests = "; ".join(
        f"{a['name']} on {a['on']}"
        + (f" ({weight})" if (weight := weight_text(a.get("failed_rows"), a.get("measured"))) else "")
        for a in failing
    )
    window = snapshot.get("window") or {}
    lines = [
        f"{'Failing' if entry.active else 'Failed'}: {tests}.",
        f"Origin columns: {', '.join(snapshot.get('origins', ())) or 'unknown'}; "
        f"bad since {window.get('onset') or window.get('began_by') or 'an unknown time'} at the earliest.",
        "",
        "Poisoned models:",
        *(f"- {line}" for line in describe(snapshot)),
    ]
    for model in snapshot.get("models", ()):
        bad = [trained_version(v) for v in model["versions"] if v["verdict"] == "CONTAMINATED"]
        trained = f"trained on bad data: {', '.join(bad)}; " if bad else ""
        lines.append(f"{model['name']}: {trained}{model['rollback_note']}")
    lines += ["", "Raised by Recall's lifecycle; it resolves itself when the tests pass, with a postmortem."]
    return "\n".join(f"- {md_text(line[2:])}" if line.startswith("- ") else md_text(line) for line in lines)


def incident_info(
    entry: IncidentEntry, config: LifecycleConfig, current: IncidentInfoClass | None, *, on_models: bool = True
) -> IncidentInfoClass:
    """The incident as the ledger has it, keeping what people set in the UI (assignees, stage)."""
    severity = entry.snapshot.get("blast_radius", {}).get("severity")
    priority = config.severity.priorities.get(severity, max(config.severity.priorities.values()))
    if entry.active:
        keep = current is not None and current.status.state == IncidentStateClass.ACTIVE
        status = IncidentStatusClass(
            state=IncidentStateClass.ACTIVE,
            stage=current.status.stage if keep and current else IncidentStageClass.TRIAGE,
            message=shown(f"Recall: {entry.timeline[-1]['detail']}") if entry.timeline else None,
            lastUpdated=stamp(entry.updated_at_ms),
        )
    else:
        status = IncidentStatusClass(
            state=IncidentStateClass.RESOLVED,
            stage=IncidentStageClass.FIXED,
            message=shown(f"Recall: {entry.timeline[-1]['detail']}") if entry.timeline else None,
            lastUpdated=stamp(entry.updated_at_ms),
        )
    names = ", ".join(a["name"] for a in entry.snapshot.get("assertions", ()))
    first = entry.snapshot.get("assertions", [{}])[0].get("urn")
    return IncidentInfoClass(
        type=IncidentTypeClass.CUSTOM,
        customType=INCIDENT_TYPE,
        title=shown(f"Poisoned data: {names}"),
        description=incident_description(entry),
        entities=[*_datasets(entry), *(_models(entry) if on_models else [])],
        priority=priority,
        assignees=current.assignees if current is not None else None,
        status=status,
        source=IncidentSourceClass(type=IncidentSourceTypeClass.ASSERTION_FAILURE, sourceUrn=first),
        startedAt=entry.started_at_ms if entry.started_at_ms is not None else entry.raised_at_ms,
        created=current.created if current is not None else stamp(entry.raised_at_ms),
    )


def postmortem_urn(entry: IncidentEntry) -> str:
    return DocumentUrn(datahub_guid({"recall": "lifecycle-postmortem", "incident": entry.id})).urn()


def postmortem_info(entry: IncidentEntry, pm: Postmortem) -> DocumentInfoClass:
    at = entry.resolved_at_ms or entry.updated_at_ms
    return DocumentInfoClass(
        title=shown(pm.title),
        status=DocumentStatusClass(state=DocumentStateClass.PUBLISHED),
        contents=DocumentContentsClass(text=shown(pm.text, lines=True)),
        source=DocumentSourceClass(
            sourceType=DocumentSourceTypeClass.EXTERNAL, externalId=f"recall-lifecycle:{entry.id}"
        ),
        relatedAssets=[RelatedAssetClass(asset=u) for u in [*_datasets(entry), *_models(entry)]],
        customProperties={**MANAGED_BY, "recall.incident": entry.urn},
        created=stamp(at),
        lastModified=stamp(at),
    )


def write_evidence(evidence_dir: Path, entry: IncidentEntry, pm: Postmortem) -> list[str]:
    """``evidence/postmortems/<incident id>.md`` and ``.json``, replaced atomically (the ledger lists them so)."""
    data = {**pm.data, "ledger": entry.contract().as_json()}
    json_path, md_path = write_record(evidence_dir / "postmortems", entry.id, data, pm.text, "evidence")
    return [str(md_path), str(json_path)]


@dataclass
class Published:
    landed: set[str] = field(default_factory=set)  # entity URNs whose writes all landed
    failures: list[str] = field(default_factory=list)  # one line per write that did not


def publish(
    graph: MetadataGraph,
    entries: Sequence[IncidentEntry],
    postmortems: Mapping[str, Postmortem],
    config: LifecycleConfig,
    policy: RetryPolicy,
    store: WritebackStore,
) -> Published:
    """Write each entry's incident (and its postmortem document, when given by entry id).

    A server known (or found now) to refuse incidents on mlModels gets them on
    the datasets alone, remembered in the same capability record the scan's
    write-back keeps, so neither path asks twice.
    """
    current = graph.get_aspects([e.urn for e in entries], [IncidentInfoClass]) if entries else {}

    def writes(on_models: bool) -> list[Write]:
        out = []
        for entry in entries:
            now = aspect_of(current.get(entry.urn, {}), IncidentInfoClass)
            info = incident_info(entry, config, now, on_models=on_models)
            out.append(Write.of("incident", entry.urn, info, info.title or ""))
            if entry.id in postmortems:
                doc = postmortem_info(entry, postmortems[entry.id])
                out.append(Write.of("document", postmortem_urn(entry), doc, doc.title or ""))
        return out

    outcome = emit(graph, writes(on_models=store.capability(INCIDENTS_ON_MODELS) is not False), policy)
    refused = {w.urn for w, _ in outcome.refused if w.path == "incident" and targets_models(w)}
    if refused:
        store.save_capabilities({INCIDENTS_ON_MODELS: False})
        outcome.refused = [(w, r) for w, r in outcome.refused if w.urn not in refused]
        outcome.merge(emit(graph, [w for w in writes(on_models=False) if w.urn in refused], policy))
    failed = [(w, reason) for w, reason in (*outcome.refused, *outcome.pending)]
    failed_urns = {w.urn for w, _ in failed}
    return Published(
        landed={w.urn for w in outcome.landed} - failed_urns,
        failures=[f"{w.aspect_name} on {w.urn}: {reason}" for w, reason in failed],
    )
