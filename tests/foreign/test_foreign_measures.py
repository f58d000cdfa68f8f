"""Measurements by their own name, on an estate in the shapes DataHub's Great Expectations action and dbt
source write: a row count against its floor, a null fraction, a source's freshness lag are said as what they
measured with the bound they broke, never as failing rows; a not-null check still counts failing rows."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from precision_estate import HOUR, _features, _mcp, _run, _table, _version, dataset, field

from recall_dagster.cli import cli
from tests.scan.scan_estates import ingest

ROWS, NULLS, AMOUNTS, FRESH = (f"urn:li:assertion:{n}" for n in ("ge-rows", "ge-nulls", "ge-amounts", "dbt-fresh"))


def _ge(urn: str, column: str | None, expectation: str, aggregation: str, operator: str,
        parameters: dict[str, Any] | None = None) -> dict[str, Any]:
    """An expectation as DataHub's Great Expectations action describes it (datahub_gx_plugin)."""
    info: dict[str, Any] = {
        "dataset": dataset("marts.orders"), "scope": "DATASET_COLUMN" if column else "DATASET_ROWS",
        "operator": operator, "aggregation": aggregation, "nativeType": expectation, "nativeParameters": {}}
    if column:
        info["fields"] = [field("marts.orders", column)]
    if parameters:
        info["parameters"] = parameters
    return _mcp(urn, "assertionInfo", {"type": "DATASET", "datasetAssertion": info,
                                       "customProperties": {"expectation_suite_name": "orders"}})


def _runs(urn: str, now_ms: int, failing: dict[str, Any], passing: dict[str, Any]) -> list[dict[str, Any]]:
    """Two passing runs, then a failing one an hour ago."""
    return [_mcp(urn, "assertionRunEvent", {
        "timestampMillis": at, "runId": f"run-{at}", "asserteeUrn": dataset("marts.orders"), "assertionUrn": urn,
        "status": "COMPLETE", "result": {"type": kind, **result}})
        for at, kind, result in ((now_ms - 3 * HOUR, "SUCCESS", passing), (now_ms - 2 * HOUR, "SUCCESS", passing),
                                 (now_ms - HOUR, "FAILURE", failing))]


def write_estate(path: Path, now_ms: int) -> Path:
    between = {"minValue": {"value": "40000", "type": "NUMBER"}, "maxValue": {"value": "60000", "type": "NUMBER"}}
    mcps = [
        *_table("marts.orders", ["amount", "customer", "discount"], operation_ms=now_ms - HOUR),
        *_features("order_stats", {"amount": "marts.orders", "customer": "marts.orders", "discount": "marts.orders"}),
        *_run("orders-fit-1", ["marts.orders"], now_ms - 30 * HOUR),
        *_version("orders_model", 1, ["orders-fit-1"],
                  [f"urn:li:mlFeature:(order_stats,{c})" for c in ("amount", "customer", "discount")],
                  deployment="orders-endpoint"),
        _ge(ROWS, None, "expect_table_row_count_to_be_between", "ROW_COUNT", "BETWEEN", between),
        *_runs(ROWS, now_ms, {"actualAggValue": 1520, "nativeResults": {"observed_value": "1520"}},
               {"actualAggValue": 48000, "nativeResults": {"observed_value": "48000"}}),
        _ge(NULLS, "discount", "expect_column_proportion_of_values_to_be_null", "_NATIVE_", "_NATIVE_"),
        *_runs(NULLS, now_ms, {"actualAggValue": 0.31, "nativeResults": {"observed_value": "0.31"}},
               {"actualAggValue": 0.01, "nativeResults": {"observed_value": "0.01"}}),
        _ge(AMOUNTS, "amount", "expect_column_values_to_not_be_null", "IDENTITY", "NOT_NULL"),
        *_runs(AMOUNTS, now_ms, {"rowCount": 48000, "unexpectedCount": 4073}, {"rowCount": 48000, "unexpectedCount": 0}),
        _mcp(FRESH, "assertionInfo", {
            "type": "CUSTOM", "customAssertion": {"type": "dbt Freshness", "entity": dataset("marts.orders")},
            "customProperties": {"dbt_freshness_test": "true", "error_after_count": "12",
                                 "error_after_period": "hour"}}),
        *_runs(FRESH, now_ms, {"nativeResults": {"status": "error", "max_loaded_at_time_ago_in_s": "108000.0"}},
               {"nativeResults": {"status": "pass", "max_loaded_at_time_ago_in_s": "3600.0"}}),
    ]
    path.write_text(json.dumps(mcps, indent=1))
    return path


@pytest.fixture(scope="module")
def estate(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("measures")
    graph = ingest(root / "graph.db", str(write_estate(root / "estate.json", int(time.time() * 1000))))
    return {"graph": str(graph), "home": str(root / "home")}


def recall(estate: dict[str, str], *args: str, as_json: bool = True) -> tuple[int, Any]:
    done = CliRunner().invoke(cli, [*args, *(["--json"] if as_json else []), "--graph", estate["graph"]],
                              env={"RECALL_HOME": estate["home"]}, terminal_width=250)
    assert done.exit_code in (0, 1, 4), done.output
    return done.exit_code, json.loads(done.output) if as_json else " ".join(done.output.split())


def test_each_failing_check_is_said_as_what_it_measured(estate: dict[str, str]) -> None:
    _, window = recall(estate, "blind-window")
    said = {a["urn"]: (a["failed_rows"], a["measured"]) for c in window["causes"] for a in c["assertions"]}
    assert said == {
        ROWS: (None, "row_count 1,520, expected between 40,000 and 60,000"),
        NULLS: (None, "observed value 0.31"),
        AMOUNTS: (4073, None),
        FRESH: (None, "freshness lag 30.0 h, expected within 12 hours"),
    }


def test_the_model_and_its_incident_weigh_the_failure_by_those_names(estate: dict[str, str]) -> None:
    _, window = recall(estate, "blind-window")
    impacts = [m for c in window["causes"] for m in c["blast_radius"]["models"]]
    measured = {text for m in impacts for text in m["measured"]}
    assert "row_count 1,520, expected between 40,000 and 60,000" in measured
    assert all(m["failed_rows"] in (None, 4073) for m in impacts), "only the not-null check counted rows"
    _, synced = recall(estate, "incidents", "sync")
    models = [m for i in synced["raised"] for m in i["models"]]
    assert any("row_count 1,520, expected between 40,000 and 60,000" in m["measured"] for m in models), synced
    _, text = recall(estate, "blind-window", as_json=False)
    assert "row_count 1,520, expected between 40,000 and 60,000" in text and "1,520 failing rows" not in text


def test_the_scan_and_the_gate_say_the_measurement_with_its_bound(estate: dict[str, str]) -> None:
    """The scan's finding and the gate's check word each failing test as the blind window does: a row count
    beside the range it left, a source's freshness lag beside its error_after, an expectation's observed value,
    a not-null check by its failing rows."""
    _, scan = recall(estate, "scan", "--model", "orders_model")
    said = " | ".join(f["message"] for m in scan["models"] for f in m["findings"]
                      if f["detector"] == "failing_assertion")
    assert "(row_count 1,520, expected between 40,000 and 60,000)" in said and "(4,073 failing rows)" in said, said
    assert "(freshness lag 30.0 h, expected within 12 hours)" in said and "(observed value 0.31)" in said, said
    assert "1,520 failing rows" not in said
    _, gate = recall(estate, "gate", "orders_model")
    details = " | ".join(next(c for c in gate["checks"] if c["name"] == "failing_assertions")["details"])
    assert "(row_count 1,520, expected between 40,000 and 60,000)" in details and "(4,073 failing rows)" in details
