"""The write-back plan: everything Recall wants true in the graph, and the part that is not yet.

Planning reads the graph once (:func:`~recall_dagster.writeback.state.read_state`)
and is otherwise pure.  Every path states its whole desired state on every
scan, so a write that failed last time is simply planned again; only run
events, which are history rather than state, need carrying over
(:mod:`recall_dagster.writeback.store`).  Writes whose aspect already holds
the desired value are left out, which is what makes a second scan of an
unchanged estate write nothing but its run events and scan times.
"""

from __future__ import annotations

from dataclasses import dataclass

from recall_dagster.graph.port import MetadataGraph
from recall_dagster.results import ScanResult
from recall_dagster.writeback.assertions import plan_assertions
from recall_dagster.writeback.config import WritebackConfig
from recall_dagster.writeback.context import PlanContext
from recall_dagster.writeback.documents import plan_documents
from recall_dagster.writeback.groups import group_findings
from recall_dagster.writeback.incidents import plan_incidents
from recall_dagster.writeback.keys import (
    LAST_SCANNED,
    MANAGED_TAG_URN,
    RISK_SCORE,
    RISK_TIER,
    assertion_urn,
    document_urn,
    incident_urn,
)
from recall_dagster.writeback.owned import plan_owned
from recall_dagster.writeback.properties import plan_properties
from recall_dagster.writeback.state import GraphState, read_state
from recall_dagster.writeback.tags import plan_tags, recall_tag_urns
from recall_dagster.writeback.writes import PATHS, Write
from recall_dagster.instants import ms_datetime


@dataclass(frozen=True)
class Plan:
    run_id: str
    desired: tuple[Write, ...]  # every aspect and event Recall wants in the graph after this scan
    writes: tuple[Write, ...]  # the part of it the graph does not hold yet, in emission order
    notes: tuple[str, ...]  # what could not be planned, and why


def run_id_of(now_ms: int) -> str:
    """``recall-20250601T000000123Z``: sortable, unique per millisecond, safe as a folder name."""
    instant = ms_datetime(now_ms)
    return f"recall-{instant:%Y%m%dT%H%M%S}{now_ms % 1000:03d}Z"


def changed(write: Write, state: GraphState) -> bool:
    """Whether the graph does not hold ``write`` yet (events always add)."""
    if write.is_event or write.mcp.aspect is None:
        return True
    current = state.aspect(write.urn, type(write.mcp.aspect))
    return current is None or current.to_obj() != write.mcp.aspect.to_obj()


def _vocabulary_first(write: Write) -> tuple[int, int]:
    """Definitions and tag entities before the values that use them, then paths in a fixed order."""
    vocabulary = write.aspect_name in ("propertyDefinition", "tagProperties")
    return (0 if vocabulary else 1, PATHS.index(write.path))


def build_plan(
    graph: MetadataGraph,
    result: ScanResult,
    config: WritebackConfig,
    now_ms: int,
    *,
    incidents_on_models: bool = True,
    list_owned: bool = False,
) -> Plan:
    """Read the graph's current state and plan every write path against it (``list_owned``: find Recall's
    entities by listing too, not only by the managed tag)."""
    groups = group_findings(result)
    models = [m.closure.urn for m in result.models]
    wanted = [
        *models,
        *(document_urn(m) for m in models),
        *(assertion_urn(g.detector, g.subject) for g in groups),
        *(incident_urn(g.detector, g.subject) for g in groups),
        RISK_SCORE,
        RISK_TIER,
        LAST_SCANNED,
        *recall_tag_urns(config),
        MANAGED_TAG_URN,
    ]
    state = read_state(graph, wanted, recall_tag_urns(config), list_owned=list_owned)
    ctx = PlanContext(
        result=result,
        config=config,
        state=state,
        groups=groups,
        now_ms=now_ms,
        run_id=run_id_of(now_ms),
        incidents_on_models=incidents_on_models,
    )
    incidents, notes = plan_incidents(ctx)
    written = [*plan_assertions(ctx), *incidents, *plan_documents(ctx)]
    desired = [*plan_properties(ctx), *plan_tags(ctx), *plan_owned(written, state), *written]  # marks first
    writes = sorted((w for w in desired if changed(w, state)), key=_vocabulary_first)
    return Plan(run_id=ctx.run_id, desired=tuple(desired), writes=tuple(writes), notes=tuple(notes))
