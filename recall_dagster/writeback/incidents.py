"""Incidents: one per serious (detector, subject), opened, resolved and reopened with the finding.

The incident's URN depends only on the finding, never on its target, so the
same incident is updated on every scan.  It targets the affected models; a
server that refuses mlModel targets (DataHub before PR #19112) gets it on the
dataset at fault instead, naming the models in its description.  What people
add in the UI (assignees, a stage, a priority) is kept across scans.
"""

from __future__ import annotations

from datahub.metadata.schema_classes import (
    IncidentInfoClass,
    IncidentSourceClass,
    IncidentSourceTypeClass,
    IncidentStageClass,
    IncidentStateClass,
    IncidentStatusClass,
    IncidentTypeClass,
)

from recall_dagster.detect import Severity
from recall_dagster.estate import display_name
from recall_dagster.writeback.context import PlanContext
from recall_dagster.writeback.groups import FindingGroup
from recall_dagster.writeback.keys import INCIDENT_TYPE_PREFIX, assertion_urn, incident_urn, stamp
from recall_dagster.writeback.writes import Write
from recall_dagster.markdown import md_text
from recall_dagster.shown import shown

# DataHub's incident priorities: 0 critical, 1 high, 2 medium, 3 low.
_PRIORITY = {Severity.CRITICAL: 0, Severity.WARN: 2, Severity.INFO: 3}


def _description(group: FindingGroup) -> str:
    lines = [
        group.finding.message,
        "",
        "Models affected: " + ", ".join(display_name(m) for m in group.models),
        "Causal chain: " + " → ".join(display_name(u) for u in group.finding.evidence.get("path", [])),
    ]
    if group.dataset:
        assertion = assertion_urn(group.detector, group.subject)
        lines.append(f"Dataset at fault: {display_name(group.dataset)} (assertion {assertion})")
    lines.append(f"Raised by Recall's {group.detector} detector; it resolves itself when the finding clears.")
    return "\n".join(md_text(line) for line in lines)  # DataHub shows a description as Markdown


def _title(group: FindingGroup) -> str:
    """What the incident is about, as a person would name it: a failing test by its name and table, as one line
    of :func:`shown` text (DataHub lists it, Slack and GitHub head their messages with it)."""
    about = display_name(group.subject)
    if group.subject.startswith("urn:li:assertion:") and group.dataset:
        about = f"{group.finding.evidence.get('assertion') or about} on {display_name(group.dataset)}"
    return shown(f"{about}: {group.detector.replace('_', ' ')}")


def _open(ctx: PlanContext, current: IncidentInfoClass | None) -> IncidentStatusClass:
    """An active incident keeps the status people gave it; a new or returning one starts at triage."""
    if current is not None and current.status.state == IncidentStateClass.ACTIVE:
        return current.status
    message = f"Recall {ctx.run_id}: " + ("the finding returned" if current is not None else "found")
    return IncidentStatusClass(
        state=IncidentStateClass.ACTIVE,
        stage=IncidentStageClass.TRIAGE,
        message=message,
        lastUpdated=stamp(ctx.now_ms),
    )


def _active(ctx: PlanContext, group: FindingGroup) -> IncidentInfoClass | None:
    current = ctx.state.aspect(incident_urn(group.detector, group.subject), IncidentInfoClass)
    entities = list(group.models) if ctx.incidents_on_models else [group.dataset] if group.dataset else []
    if not entities:
        return None
    return IncidentInfoClass(
        type=IncidentTypeClass.CUSTOM,
        customType=f"{INCIDENT_TYPE_PREFIX}{group.detector}",
        title=_title(group),
        description=_description(group),
        entities=entities,
        priority=_PRIORITY[group.severity] if current is None or current.priority is None else current.priority,
        assignees=current.assignees if current is not None else None,
        status=_open(ctx, current),
        source=IncidentSourceClass(type=IncidentSourceTypeClass.MANUAL),
        startedAt=current.startedAt if current is not None and current.startedAt else ctx.now_ms,
        created=current.created if current is not None else stamp(ctx.now_ms),
    )


def _resolved(ctx: PlanContext, current: IncidentInfoClass) -> IncidentInfoClass:
    if current.status.state == IncidentStateClass.RESOLVED:
        return current
    resolved = IncidentInfoClass.from_obj(current.to_obj())
    resolved.status = IncidentStatusClass(
        state=IncidentStateClass.RESOLVED,
        stage=IncidentStageClass.FIXED,
        message=f"Recall {ctx.run_id}: the finding cleared",
        lastUpdated=stamp(ctx.now_ms),
    )
    return resolved


def plan_incidents(ctx: PlanContext) -> tuple[list[Write], list[str]]:
    """The incidents as they should stand, and a note for each one no target could be found for."""
    writes, notes = [], []
    holding = set()
    for group in ctx.groups:
        if not group.severity.at_least(ctx.config.incident_severity):
            continue
        urn = incident_urn(group.detector, group.subject)
        holding.add(urn)
        info = _active(ctx, group)
        if info is None:
            notes.append(
                f"no incident for {group.detector} on {display_name(group.subject)}: the server refuses model "
                "targets and no dataset is at fault"
            )
            continue
        writes.append(Write.of("incident", urn, info, f"ACTIVE: {info.title}"))
    for urn in ctx.state.incidents:
        current = ctx.state.aspect(urn, IncidentInfoClass)
        if urn in holding or current is None:
            continue
        info = _resolved(ctx, current)
        writes.append(Write.of("incident", urn, info, f"RESOLVED: {info.title}"))
    return writes, notes


def targets_models(write: Write) -> bool:
    """Whether an incident write names mlModels: the writes to re-aim when the server refuses those."""
    info = write.mcp.aspect
    return isinstance(info, IncidentInfoClass) and any(e.startswith("urn:li:mlModel:") for e in info.entities)
