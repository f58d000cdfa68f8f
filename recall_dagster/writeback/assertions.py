"""Assertions: one custom assertion per (detector, subject), with a run event on every scan.

DataHub accepts assertions on datasets only, so each hangs on the dataset at
fault (the finding's cause, else a dataset subject); a finding about a model
with no dataset behind it gets none and is written as tags, properties,
incidents and documents instead.  Every scan reports FAILURE for each finding
that holds and SUCCESS for each of Recall's assertions whose finding cleared,
so the assertion's latest run always says how things stand now.
"""

from __future__ import annotations

import json

from datahub.metadata.schema_classes import (
    AssertionInfoClass,
    AssertionResultClass,
    AssertionResultSeverityClass,
    AssertionResultTypeClass,
    AssertionRunEventClass,
    AssertionRunStatusClass,
    AssertionSourceClass,
    AssertionSourceTypeClass,
    AssertionTypeClass,
    CustomAssertionInfoClass,
)

from recall_dagster.detect import Severity
from recall_dagster.estate import display_name
from recall_dagster.instants import iso_instant
from recall_dagster.writeback.context import PlanContext
from recall_dagster.writeback.groups import FindingGroup
from recall_dagster.writeback.keys import assertion_urn, managed
from recall_dagster.writeback.writes import Write

_RESULT_SEVERITY = {
    Severity.CRITICAL: AssertionResultSeverityClass.HIGH,
    Severity.WARN: AssertionResultSeverityClass.MEDIUM,
    Severity.INFO: AssertionResultSeverityClass.LOW,
}


def assertion_info(group: FindingGroup, dataset: str) -> AssertionInfoClass:
    """What is asserted, worded to stay the same however many models report it."""
    return AssertionInfoClass(
        type=AssertionTypeClass.CUSTOM,
        customAssertion=CustomAssertionInfoClass(type=f"recall:{group.detector}", entity=dataset),
        description=f"Recall finds no {group.detector} problem with {display_name(group.subject)}",
        source=AssertionSourceClass(type=AssertionSourceTypeClass.EXTERNAL),
        customProperties=managed(**{"recall.detector": group.detector, "recall.subject": group.subject}),
        entityUrn=dataset,
    )


def run_event(
    ctx: PlanContext,
    urn: str,
    dataset: str,
    failed: bool,
    native: dict[str, str],
    severity: str | None = None,
) -> AssertionRunEventClass:
    return AssertionRunEventClass(
        timestampMillis=ctx.now_ms,
        runId=ctx.run_id,
        asserteeUrn=dataset,
        assertionUrn=urn,
        status=AssertionRunStatusClass.COMPLETE,
        result=AssertionResultClass(
            type=AssertionResultTypeClass.FAILURE if failed else AssertionResultTypeClass.SUCCESS,
            severity=severity,
            nativeResults={"scanned_at": iso_instant(ctx.result.scanned_at_ms), **native},
        ),
    )


def plan_assertions(ctx: PlanContext) -> list[Write]:
    writes = []
    holding = set()
    for group in ctx.groups:
        if group.dataset is None:
            continue
        urn = assertion_urn(group.detector, group.subject)
        holding.add(urn)
        name = f"{group.detector} on {display_name(group.subject)}"
        writes.append(Write.of("assertion", urn, assertion_info(group, group.dataset), name))
        event = run_event(
            ctx,
            urn,
            group.dataset,
            failed=True,
            native={
                "message": group.finding.message,
                "severity": group.severity.value,
                "models": json.dumps([display_name(m) for m in group.models]),
            },
            severity=_RESULT_SEVERITY[group.severity],
        )
        writes.append(Write.of("assertion", urn, event, f"FAILURE: {name}"))
    for urn in ctx.state.assertions:
        info = ctx.state.aspect(urn, AssertionInfoClass)
        if urn in holding or info is None or info.customAssertion is None:
            continue
        cleared = {"message": "the finding cleared"}
        event = run_event(ctx, urn, info.customAssertion.entity, failed=False, native=cleared)
        writes.append(Write.of("assertion", urn, event, f"SUCCESS: {info.description}"))
    return writes
