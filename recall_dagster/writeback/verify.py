"""``recall verify``: exercise every write path against a live graph, then clean up.

A scratch model and dataset (platform ``recall``, named ``recall-verify-<time>``)
go through the same planner and emitter a scan uses: first at the most serious
tier with one critical finding, then healed.  Each path is read back after
each phase, so the check is that the server stores what Recall writes and that
stand-down undoes it.  Only the scratch entities' writes are sent: a synthetic
scan of one model would otherwise stand down every real model.

Capabilities found on the way (incidents on mlModels, the document entity,
structured properties) are reported and remembered for later write-backs.
Everything verify created is soft-deleted with a ``status`` aspect, the one
removal an MCP can make; an entity type without ``status`` (incidents) is left
resolved, with the command that removes it for good.  The shared vocabulary
(the three property definitions, the tier tags) is what every scan writes
anyway, so it stays.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, TypeVar, cast

from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata.schema_classes import (
    ENTITY_TYPE_TO_ASPECT_NAMES,
    AssertionInfoClass,
    AssertionRunEventClass,
    DatasetPropertiesClass,
    DocumentInfoClass,
    DocumentStateClass,
    GlobalTagsClass,
    IncidentInfoClass,
    IncidentStateClass,
    MLModelPropertiesClass,
    StatusClass,
    StructuredPropertiesClass,
)
from datahub.utilities.urns.urn import guess_entity_type

from recall_dagster.contracts import verify as contract
from recall_dagster.contracts.base import VERSION
from recall_dagster.contracts.verify import Phase
from recall_dagster.detect import Finding, ScanConfig, Severity
from recall_dagster.estate import Dataset, Model, ModelClosure
from recall_dagster.graph.port import AspectMap, MetadataGraph
from recall_dagster.results import ModelReport, ScanResult
from recall_dagster.score import Score
from recall_dagster.settings import Settings
from recall_dagster.writeback.config import WritebackConfig
from recall_dagster.writeback.emit import Outcome, emit
from recall_dagster.writeback.keys import RISK_TIER, assertion_urn, document_urn, incident_urn, is_recall_tag
from recall_dagster.writeback.run import INCIDENTS_ON_MODELS, plan_writeback, reaim_incidents
from recall_dagster.writeback.store import WritebackStore

DETECTOR = "verify"
_VOCABULARY = ("propertyDefinition", "tagProperties")
Sleep = Callable[[float], None]


@dataclass(frozen=True)
class Check:
    path: str
    phase: Phase
    ok: bool
    detail: str


@dataclass(frozen=True)
class Verification:
    graph: str
    checks: tuple[Check, ...]
    capabilities: dict[str, bool]
    removed: tuple[str, ...]  # soft-deleted
    left: tuple[str, ...]  # could not be removed by an MCP

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    def contract(self) -> contract.Verification:
        return contract.Verification(
            schema_version=VERSION,
            graph=self.graph,
            ok=self.ok,
            checks=[contract.WritePath(path=c.path, phase=c.phase, ok=c.ok, detail=c.detail) for c in self.checks],
            capabilities=self.capabilities,
            removed=list(self.removed),
            left=list(self.left),
            hard_delete=[f"datahub delete --urn '{u}' --hard" for u in (*self.removed, *self.left)],
        )


@dataclass(frozen=True)
class _Scratch:
    name: str

    @property
    def model(self) -> str:
        return f"urn:li:mlModel:(urn:li:dataPlatform:recall,{self.name},PROD)"

    @property
    def dataset(self) -> str:
        return f"urn:li:dataset:(urn:li:dataPlatform:recall,{self.name},PROD)"

    @property
    def assertion(self) -> str:
        return assertion_urn(DETECTOR, self.dataset)

    @property
    def incident(self) -> str:
        return incident_urn(DETECTOR, self.dataset)

    @property
    def document(self) -> str:
        return document_urn(self.model)

    @property
    def urns(self) -> tuple[str, ...]:
        return (self.model, self.dataset, self.assertion, self.incident, self.document)

    def scan(self, config: ScanConfig, at_ms: int, sick: bool) -> ScanResult:
        """A scan of the scratch model alone: at the worst tier with one finding, or healthy."""
        finding = Finding(
            detector=DETECTOR,
            severity=Severity.CRITICAL,
            subject=self.dataset,
            message=f"recall verify: scratch finding on {self.name}",
            evidence={"path": [self.model, self.dataset]},
            cause=self.dataset,
        )
        closure = ModelClosure(
            model=Model(urn=self.model, name=self.name),
            production=True,
            datasets={self.dataset: Dataset(urn=self.dataset, name=self.name)},
            parents={self.dataset: self.model},
        )
        scoring = config.scoring
        score = Score(scoring.max_score, scoring.ranked[0].name) if sick else Score(0, scoring.healthy_tier)
        report = ModelReport(closure=closure, findings=(finding,) if sick else (), score=score)
        return ScanResult(
            scanned_at_ms=at_ms, graph="recall verify", models=(report,), blast_radius=(), config=config
        )


def _phase(
    graph: MetadataGraph,
    result: ScanResult,
    config: WritebackConfig,
    scratch: _Scratch,
    store: WritebackStore,
    sleep: Sleep,
    stood_down: frozenset[str] = frozenset(),
) -> Outcome:
    """Plan as a scan would and send only the scratch entities' writes (and the shared vocabulary).

    ``stood_down`` names what the plan must stand down: GMS finds Recall's
    entities through its graph index (the managed tag's edges) or search, both
    updated a little after a write lands, so planning waits (with the retry
    policy's backoff) until they name them.
    """
    at_ms = result.scanned_at_ms
    for attempt in range(1, config.retry.attempts + 1):
        plan = plan_writeback(graph, result, config, at_ms, store, sleep)
        if stood_down <= {w.urn for w in plan.writes} or attempt == config.retry.attempts:
            break
        sleep(config.retry.delay(attempt))
    ours = [w for w in plan.writes if w.urn in scratch.urns or w.aspect_name in _VOCABULARY]
    outcome = emit(graph, ours, config.retry, sleep)
    return reaim_incidents(graph, result, config, at_ms, outcome, store, sleep)


_Stated = TypeVar("_Stated", IncidentInfoClass, DocumentInfoClass)  # an aspect with a status.state


def _state(aspects: AspectMap, urn: str, aspect_class: type[_Stated]) -> str:
    """The ``status.state`` of an incident or document, or "missing"."""
    found = aspects[urn].get(aspect_class.ASPECT_NAME)
    # DataHub types an enum field as Union[str, <enum class>]; its value is one of that class's str constants
    return cast(str, found.status.state) if isinstance(found, aspect_class) else "missing"


def _read_back(graph: MetadataGraph, scratch: _Scratch) -> dict[str, Any]:
    """What the graph now says on each path, in the terms the checks compare."""
    aspects = graph.get_aspects(list(scratch.urns))
    model = aspects[scratch.model]
    properties = model.get(StructuredPropertiesClass.ASPECT_NAME)
    tags = model.get(GlobalTagsClass.ASPECT_NAME)
    runs = graph.timeseries([scratch.assertion], AssertionRunEventClass, limit=1)[scratch.assertion]
    has_info = isinstance(aspects[scratch.assertion].get(AssertionInfoClass.ASPECT_NAME), AssertionInfoClass)
    latest = runs[0].result if has_info and runs else None
    return {
        "property": [p.values for p in getattr(properties, "properties", []) if p.propertyUrn == RISK_TIER],
        "tag": [t.tag for t in getattr(tags, "tags", []) if is_recall_tag(t.tag)],
        "assertion": latest.type if latest is not None else None,
        "incident": _state(aspects, scratch.incident, IncidentInfoClass),
        "document": _state(aspects, scratch.document, DocumentInfoClass),
    }


def _checks(found: dict[str, Any], expected: dict[str, Any], outcome: Outcome, phase: Phase) -> list[Check]:
    checks = []
    for path, want in expected.items():
        failed = [reason for w, reason in (*outcome.refused, *outcome.pending) if w.path == path]
        ok = not failed and found[path] == want
        detail = failed[0] if failed else "read back" if ok else f"read {found[path]}, expected {want}"
        checks.append(Check(path, phase, ok, detail))
    return checks


def _cleanup(graph: MetadataGraph, scratch: _Scratch) -> tuple[list[str], list[str]]:
    """Soft-delete what verify created, where the entity type has a ``status`` aspect."""
    removable = [u for u in scratch.urns if "status" in ENTITY_TYPE_TO_ASPECT_NAMES[guess_entity_type(u)]]
    report = graph.emit_mcps(
        MetadataChangeProposalWrapper(entityUrn=u, aspect=StatusClass(removed=True)) for u in removable
    )
    failed = {urn for urn, _, _ in report.failures}
    removed = [u for u in removable if u not in failed]
    return removed, [u for u in scratch.urns if u not in removed]


def verify(
    graph: MetadataGraph,
    settings: Settings,
    recall_config: ScanConfig,
    config: WritebackConfig,
    now_ms: int,
    *,
    sleep: Sleep = time.sleep,
) -> Verification:
    """Raise and stand down a scratch model through every write path; report and remember capabilities."""
    scratch = _Scratch(f"recall-verify-{now_ms}")
    store = WritebackStore(settings.state_dir, graph.location)
    store.save_capabilities({INCIDENTS_ON_MODELS: True})  # probe afresh: a refusal below sets it back
    scoring = recall_config.scoring
    worst = scoring.ranked[0].name
    tag = config.tags.get(worst)
    graph.emit_mcps(
        [
            MetadataChangeProposalWrapper(
                entityUrn=scratch.model, aspect=MLModelPropertiesClass(description="recall verify scratch model")
            ),
            MetadataChangeProposalWrapper(
                entityUrn=scratch.dataset, aspect=DatasetPropertiesClass(description="recall verify scratch dataset")
            ),
        ]
    )
    raised = _phase(graph, scratch.scan(recall_config, now_ms, True), config, scratch, store, sleep)
    checks = _checks(
        _read_back(graph, scratch),
        {
            "property": [[worst]],
            "tag": [f"urn:li:tag:{tag}"] if tag else [],
            "assertion": "FAILURE",
            "incident": IncidentStateClass.ACTIVE,
            "document": DocumentStateClass.PUBLISHED,
        },
        raised,
        "raise",
    )
    written = frozenset(w.urn for w in raised.landed if w.path in ("assertion", "incident", "document"))
    healed_scan = scratch.scan(recall_config, now_ms + 1, False)
    healed = _phase(graph, healed_scan, config, scratch, store, sleep, written)
    checks += _checks(
        _read_back(graph, scratch),
        {
            "property": [[scoring.healthy_tier]],
            "tag": [],
            "assertion": "SUCCESS",
            "incident": IncidentStateClass.RESOLVED,
            "document": DocumentStateClass.UNPUBLISHED,
        },
        healed,
        "stand down",
    )
    removed, left = _cleanup(graph, scratch)
    capabilities = {
        INCIDENTS_ON_MODELS: store.capability(INCIDENTS_ON_MODELS) is not False,
        "documents": not any(w.path == "document" for w, _ in raised.refused),
        "structured_properties": not any(w.path == "property" for w, _ in raised.refused),
    }
    return Verification(graph.location, tuple(checks), capabilities, tuple(removed), tuple(left))
