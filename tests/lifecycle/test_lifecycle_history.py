"""A failing streak longer than history_limit is read back to its start, so the rollback is still named."""

from __future__ import annotations

from contextlib import closing
from dataclasses import replace
from pathlib import Path

from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata.schema_classes import AssertionResultClass, AssertionRunEventClass
from lifecycle_estates import FCT, at, closure, datasets, estate, model_urn, span_for

from recall_dagster.estate import Assertion
from recall_dagster.graph import LiteGraph
from recall_dagster.lifecycle.assess import root_causes
from recall_dagster.config.load import load
from recall_dagster.lifecycle.read import read_assertions
from recall_dagster.lifecycle.verdict import Status

ASSERTION = "urn:li:assertion:fct-price"


def _runs(results: list[str]) -> list[MetadataChangeProposalWrapper]:
    """One run an hour from T0, oldest first."""
    return [
        MetadataChangeProposalWrapper(entityUrn=ASSERTION, aspect=AssertionRunEventClass(
            timestampMillis=at(hour), assertionUrn=ASSERTION, asserteeUrn=FCT, runId=f"run-{hour}",
            status="COMPLETE", result=AssertionResultClass(type=result, nativeResults={"failures": "5"}),
        ))
        for hour, result in enumerate(results)
    ]


def test_a_streak_of_30_failures_with_a_limit_of_20_still_names_the_rollback(tmp_path: Path) -> None:
    lc = load().lifecycle
    views = datasets()
    views[FCT] = replace(views[FCT], assertions=(Assertion(ASSERTION, "not_null_price", "unit_price"),))
    world = estate([closure(1, views=views, live=True), closure(2, views=views, live=True)])
    with closing(LiteGraph(tmp_path / "graph.db")) as graph:
        assert graph.emit_mcps(_runs(["SUCCESS"] * 5 + ["FAILURE"] * 30)).ok
        [record] = read_assertions(graph, world, 20, lc.failing)
    assert len(record.runs) > 30, "read past history_limit until a passing run"
    assert record.runs[30].result == "SUCCESS" and record.runs[30].at_ms == at(4), "the last pass before the streak"
    spans = {model_urn(1): (span_for(2, 3),), model_urn(2): (span_for(20, 21),)}  # before the streak; inside it
    (cause,) = root_causes([record], world, spans, lc)
    (fraud,) = cause.models
    assert {v.name: v.verdict.status for v in fraud.versions} == {
        "fraud_detector_1": Status.CLEAN, "fraud_detector_2": Status.CONTAMINATED
    }
    assert fraud.rollback is not None and fraud.rollback.name == "fraud_detector_1"
