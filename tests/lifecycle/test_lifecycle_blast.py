"""Column-precise blast radius, severity, and root causes on the hand-made price estate."""

from __future__ import annotations

from dataclasses import replace

import pytest
from lifecycle_estates import (
    DEVICE,
    FCT,
    FCT_PG,
    RAW,
    STG,
    STG_PG,
    at,
    closure,
    datasets,
    estate,
    model_urn,
    record,
    span_for,
    urn,
)

from recall_dagster.estate import ColumnEdge, Dataset, SchemaField, TrainingRun
from recall_dagster.estate.columns import column_graph
from recall_dagster.impact.targets import affected_models

from recall_dagster.lifecycle.assess import root_causes
from recall_dagster.lifecycle.blast import blast_radius, describe, severity_of
from recall_dagster.lifecycle.config import LifecycleConfig
from recall_dagster.config.load import load
from recall_dagster.lifecycle.override import GateOverride
from recall_dagster.lifecycle.verdict import Status
from recall_dagster.narrate import window_paragraph


@pytest.fixture(scope="module")
def lc() -> LifecycleConfig:
    return load().lifecycle


def test_a_failing_column_is_rerooted_and_closed_downstream_through_twins(lc: LifecycleConfig) -> None:
    world = estate([closure(1, live=True)])
    radius = blast_radius([record([(0, "SUCCESS"), (10, "FAILURE")])], world.closures, world.columns, lc)
    assert radius.origins == ((RAW, "unit_price"),), "re-rooted through the dbt node and its warehouse twin"
    assert {(FCT, "unit_price"), (FCT, "amount_to_price_ratio"), (STG, "unit_price")} <= set(radius.poisoned_columns)
    (impact,) = radius.models
    assert impact.summary == "1 of 4 features poisoned, 1 suspect"
    assert [(f.name, f.evidence) for f in impact.poisoned] == [("order_unit_price", "column")], (
        "confirmed: derived from the failing column itself"
    )
    assert [(f.name, f.evidence) for f in impact.suspect] == [("amount_to_price_ratio", "name")], (
        "suspect: a sibling computed from the same origin, not from the failing column"
    )
    [price] = impact.poisoned
    assert [c[1] for c in price.lineage] == ["unit_price", "unit_price", "unit_price"]
    assert price.lineage[0] == (RAW, "unit_price")
    assert impact.failed_rows == 223 and impact.observed_by == ("urn:li:assertion:fct-price",)
    assert impact.live_deployments and impact.severity == "HIGH", "a quarter of its features confirmed, live"


def test_name_matching_can_be_turned_off(lc: LifecycleConfig) -> None:
    world = estate([closure(1)])
    radius = blast_radius([record([(10, "FAILURE")])], world.closures, world.columns, lc.model_copy(update={"name_matching": False}))
    assert [f.name for f in radius.models[0].poisoned] == ["order_unit_price"]


def test_an_unrelated_column_poisons_nothing(lc: LifecycleConfig) -> None:
    world = estate([closure(1)])
    device = record([(10, "FAILURE")], urn_="urn:li:assertion:device", dataset=DEVICE, column="ip_risk_score")
    (impact,) = blast_radius([device], world.closures, world.columns, lc).models
    assert [f.name for f in impact.poisoned] == ["device_ip_risk_score"]
    untouched = record([(10, "FAILURE")], dataset=FCT, column="hour_of_day")
    assert blast_radius([untouched], world.closures, world.columns, lc).models == ()


def test_a_table_level_failure_poisons_its_own_columns_only_when_configured(lc: LifecycleConfig) -> None:
    world = estate([closure(1)])
    table = record([(10, "FAILURE")], dataset=FCT_PG, column=None)
    (impact,) = blast_radius([table], world.closures, world.columns, lc).models
    assert impact.summary == "3 of 4 features poisoned"
    assert blast_radius([table], world.closures, world.columns, lc.model_copy(update={"table_level": False})).models == ()


def test_severity_scales_with_the_poisoned_share_not_high_on_everything(lc: LifecycleConfig) -> None:
    bands = lc.severity
    assert [severity_of(s, True, bands) for s in (0.6, 2 / 6, 0.2, 0.05)] == ["CRITICAL", "HIGH", "MEDIUM", "LOW"]
    assert severity_of(2 / 6, False, bands) == "MEDIUM", "no live deployment: one level lower"
    assert severity_of(0.0, False, bands) == "LOW", "never below the quietest"


def test_root_causes_group_tests_with_one_origin_and_judge_every_version(lc: LifecycleConfig) -> None:
    versions = [closure(1, live=True), closure(2, live=True), closure(3)]
    world = estate(versions)
    history = [(0, "SUCCESS"), (10, "FAILURE"), (12, "FAILURE")]
    stg = record(history, urn_="urn:li:assertion:stg-price", dataset=STG, rows=130, writes=(9,))
    fct = record(history, writes=(9,))
    spans = {model_urn(1): (span_for(-3, -2),), model_urn(2): (span_for(11, 11.5),), model_urn(3): ()}
    (cause,) = root_causes([stg, fct], world, spans, lc)
    assert cause.active and set(cause.failing) == {stg.urn, fct.urn}
    (fraud,) = cause.models
    verdicts = {v.name: v.verdict.status for v in fraud.versions}
    assert verdicts == {"fraud_detector_1": Status.CLEAN, "fraud_detector_2": Status.CONTAMINATED, "fraud_detector_3": Status.UNKNOWN}
    assert [v.name for v in fraud.versions] == ["fraud_detector_3", "fraud_detector_2", "fraud_detector_1"]
    assert fraud.rollback is not None and fraud.rollback.name == "fraud_detector_1"
    assert "roll back to fraud_detector_1" in fraud.rollback_note


def test_a_version_trained_past_a_refusing_gate_says_by_whom_and_why(lc: LifecycleConfig) -> None:
    """The override's MLflow version tags, as DataHub's mlflow source carries them into customProperties."""
    past = closure(2, live=True)
    tags = GateOverride("ana@shop.example", "known late-orders lag", "NO-GO").version_tags("run-7")
    past = replace(past, model=replace(past.model, properties=tags))
    world = estate([closure(1, live=True), past])
    spans = {model_urn(1): (span_for(2, 3),), model_urn(2): (span_for(11, 11.5),)}
    (cause,) = root_causes([record([(0, "SUCCESS"), (10, "FAILURE")], writes=(9,))], world, spans, lc)
    versions = {v["name"]: v for v in cause.contract().as_json()["models"][0]["versions"]}
    assert versions["fraud_detector_2"]["gate_override"] == {
        "by": "ana@shop.example", "reason": "known late-orders lag", "verdict": "NO-GO"
    }
    assert versions["fraud_detector_1"]["gate_override"] is None
    assert ("fraud_detector_2 was trained past a NO-GO retrain gate by ana@shop.example (known late-orders lag)"
            in window_paragraph(cause.contract().as_json()))


def test_a_model_with_no_clean_version_names_no_rollback_and_says_so(lc: LifecycleConfig) -> None:
    world = estate([closure(1), closure(2)])
    spans = {model_urn(1): (span_for(11, 12),), model_urn(2): (span_for(None, None),)}
    (cause,) = root_causes([record([(0, "SUCCESS"), (10, "FAILURE")])], world, spans, lc)
    (fraud,) = cause.models
    assert fraud.rollback is None
    assert "no rollback target" in fraud.rollback_note
    assert cause.contract().as_json()["models"][0]["rollback"] is None


def test_a_history_that_never_failed_is_no_cause(lc: LifecycleConfig) -> None:
    world = estate([closure(1)])
    assert root_causes([record([(0, "SUCCESS"), (1, "SUCCESS")])], world, {}, lc) == ()


def test_a_healed_cause_is_inactive_and_keeps_its_window(lc: LifecycleConfig) -> None:
    world = estate([closure(1)])
    (cause,) = root_causes([record([(0, "SUCCESS"), (10, "FAILURE"), (20, "SUCCESS")])], world, {}, lc)
    assert not cause.active and cause.window is not None and cause.window.ended_by_ms == at(20)
    assert cause.failed_rows[cause.records[0].urn] == 223, "the rows of the newest failing run, not of the pass"


def test_a_sibling_of_the_failing_column_is_suspect_never_critical(lc: LifecycleConfig) -> None:
    """A failing test on mart.total (built from amount and qty) makes a model reading qty_mart.qty suspect."""
    raw = urn("postgres", "raw.lines")
    mart, qty_mart = urn("postgres", "marts.mart"), urn("postgres", "marts.qty_mart")
    views = {
        raw: Dataset(raw, "warehouse.raw.lines", fields=(SchemaField("amount", "n"), SchemaField("qty", "n"))),
        mart: Dataset(mart, "warehouse.marts.mart", fields=(SchemaField("total", "n"),), upstreams=(raw,),
                      column_lineage=(ColumnEdge((raw, "amount"), (mart, "total")), ColumnEdge((raw, "qty"), (mart, "total")))),
        qty_mart: Dataset(qty_mart, "warehouse.marts.qty_mart", fields=(SchemaField("qty", "n"),), upstreams=(raw,),
                          column_lineage=(ColumnEdge((raw, "qty"), (qty_mart, "qty")),)),
    }
    model = closure(1, live=True, views=views, features=(("qty", qty_mart, "qty"),))
    world = estate([model])
    failing = record([(0, "SUCCESS"), (10, "FAILURE")], dataset=mart, column="total")
    (impact,) = blast_radius([failing], world.closures, world.columns, lc).models
    assert (impact.poisoned, [f.name for f in impact.suspect]) == ((), ["qty"])
    assert impact.severity == "MEDIUM", "a whole model reached only through a sibling is at most MEDIUM, live or not"
    cleared = blast_radius([failing], world.closures, world.columns, lc, passing=frozenset({(qty_mart, "qty")}))
    assert cleared.models == (), "a passing test on the sibling's own column clears the suspicion"


def test_an_incident_folds_retired_versions_into_one_line() -> None:
    """After a few retrains most versions serve nothing and are no rollback target: one line, not one each."""
    def version(n: int, live: bool = False, production: bool = False) -> dict:
        return {"name": f"fraud_{n}", "severity": "HIGH" if live or production else "MEDIUM", "summary": "1 of 6",
                "features": [{"name": "amount", "evidence": "lineage"}], "suspect_features": [], "poisoned_inputs": [],
                "live_deployments": ["urn:li:mlModelDeployment:(urn:li:dataPlatform:k,api,PROD)"] if live else [],
                "production": production, "failed_rows": None, "observed_by": []}
    cause = {"blast_radius": {"models": [version(9, live=True, production=True), version(8), version(7), version(6),
                                         version(5)]},
             "models": [{"name": "fraud", "rollback": {"name": "fraud_6"}}]}
    lines = describe(cause)
    assert [line.split(" ")[0] for line in lines[:2]] == ["fraud_9", "fraud_6"], "live, then the rollback target"
    assert lines[2] == ("3 retired versions (serving nothing, not in production, no rollback target), "
                        "at most [MEDIUM]: fraud_8, fraud_7, fraud_5")
    assert len(lines) == 3


def test_an_aggregate_without_column_lineage_is_reached_by_table_lineage_as_a_suspect(lc: LifecycleConfig) -> None:
    """``count(*)`` over the staging orders: the daily table's columns record no lineage, so the failing price
    reaches the model that trains on it through table lineage only, the same way for every command."""
    daily = urn("dbt", "marts.daily_orders")
    views = {**datasets(), daily: Dataset(daily, "warehouse.marts.daily_orders", upstreams=(STG_PG,),
                                          fields=(SchemaField("day", "date"), SchemaField("order_count", "numeric")))}
    run = "urn:li:dataProcessInstance:forecast-1"
    version = replace(closure(1, name="forecaster", live=True, views=views, features=()),
                      training_runs=(TrainingRun(run, run, inputs=(daily,)),))
    columns = column_graph([version])
    failing = record([(0, "SUCCESS"), (10, "FAILURE")], dataset=STG, column="unit_price")
    [hit] = blast_radius([failing], [version], columns, lc).models
    assert hit.table_reach == ((daily, "day"), (daily, "order_count"))
    assert hit.summary == "reached by table lineage only: 2 input column(s) with no column lineage (suspect)"
    assert hit.severity == "MEDIUM", "a suspect is never louder than the cap"
    [affected] = affected_models([version], columns, (STG, "unit_price"), lc)
    assert [i.name for i in affected.inputs] == ["day", "order_count"] and all(i.derived for i in affected.inputs)
    other = record([(0, "SUCCESS"), (10, "FAILURE")], dataset=DEVICE, column="ip_risk_score")
    assert blast_radius([other], [version], columns, lc).models == (), "a table it does not descend from"


def test_as_of_an_instant_the_history_holds_only_what_was_recorded_by_then(lc: LifecycleConfig) -> None:
    """``--as-of`` reaches the lifecycle as it reaches the scan: before the first failure there is no root
    cause; between the failure and the repair the cause is active; now it has healed."""
    world = estate([closure(1, live=True), closure(2, live=True)])
    spans = {model_urn(1): (span_for(2, 3),), model_urn(2): (span_for(11, 11.5),)}
    test = record([(0, "SUCCESS"), (10, "FAILURE"), (20, "SUCCESS")], writes=(9, 19))
    assert root_causes([test.as_of(at(5))], world, spans, lc) == ()
    (failing,) = root_causes([test.as_of(at(15))], world, spans, lc)
    assert failing.active and failing.window is not None and failing.window.contract().as_json()["end"] is None
    (healed,) = root_causes([test], world, spans, lc)
    assert not healed.active
    assert test.as_of(at(15)).writes_ms == (at(9),) and test.as_of(at(30)) is test
