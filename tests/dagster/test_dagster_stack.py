"""Recall's Dagster objects run in-process on the real demo estate, as one story told in order.

The scan materializes on the healthy estate; a bad load fails a real dbt test,
whose failed check the sensor turns into a rescan; the fraud detector's retrain
is refused by the gate in front of it in the same run; once the raw layer is
reloaded the retrain runs, and the MLflow sensor scans the version it registered
once the ingestion has carried it into DataHub.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import pytest
from dagster import (
    AssetCheckKey,
    AssetKey,
    DagsterInstance,
    Definitions,
    ExecuteInProcessResult,
    build_sensor_context,
    instance_for_test,
)
from click.testing import CliRunner
from mlflow import MlflowClient

from recall_dagster.cli import cli
from recall_dagster.config.load import load
from recall_dagster.estate.resolve import resolve_closures
from recall_dagster.graph import LiteGraph
from recall_dagster.settings import Settings
from seed.stack.warehouse import ensure_warehouse
from tests.conftest import built_estate, point_recall_at
from tests.gate_runs import withheld
from seed.dagster.definitions import build_definitions

pytestmark = [pytest.mark.stack, pytest.mark.slow]

FRAUD = AssetKey(["ml", "fraud_detector"])
GATE_ASSET = AssetKey(["ml", "fraud_detector_retrain_gate"])
GATE = AssetCheckKey(GATE_ASSET, "retrain_gate")
INGEST = AssetKey("datahub_metadata")
PROMOTION = AssetKey(["ml", "fraud_detector_promotion"])
SCAN = ["model_closures", "risk_findings", "impact_tests", "risk_scores", "datahub_writeback"]


@pytest.fixture(scope="module")
def estate(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    with built_estate(tmp_path_factory.mktemp("estate")) as settings:
        yield settings


@pytest.fixture(scope="module")
def defs(estate: Settings) -> Definitions:
    return build_definitions(estate, with_recall=True)


@pytest.fixture(scope="module")
def instance() -> Iterator[DagsterInstance]:
    with instance_for_test() as instance:
        yield instance


def run(defs: Definitions, instance: DagsterInstance, job: str, **kwargs: Any) -> ExecuteInProcessResult:
    return defs.resolve_job_def(job).execute_in_process(instance=instance, raise_on_error=False, **kwargs)


def metadata(result: ExecuteInProcessResult, key: str) -> dict[str, Any]:
    [event] = [e for e in result.get_asset_materialization_events() if e.asset_key == AssetKey(key.split("/"))]
    return {name: value.value for name, value in event.materialization.metadata.items()}


def sense(defs: Definitions, instance: DagsterInstance, name: str, cursor: str | None = None):
    """One tick, with the resources the sensor asks for, as the daemon gives them (dagster-mlflow's resource,
    among the location's, opens an MLflow run and so can only start inside a run)."""
    with build_sensor_context(instance=instance, cursor=cursor, definitions=defs,
                              resources=asked_for(defs, name)) as context:
        return defs.resolve_sensor_def(name)(context)


def asked_for(defs: Definitions, sensor: str) -> dict[str, Any]:
    return {key: defs.resources[key] for key in defs.resolve_sensor_def(sensor).required_resource_keys}


def _judged(model: dict[str, Any]) -> dict[str, Any]:
    return {k: model[k] for k in ("urn", "score", "tier", "findings")}


def fraud_versions(settings: Settings) -> list[int]:
    client = MlflowClient(tracking_uri=settings.mlflow_uri, registry_uri=settings.mlflow_uri)
    return sorted(int(v.version) for v in client.search_model_versions("name = 'fraud_detector'"))


def test_the_scan_materializes_with_metadata_and_evidence(defs, instance, estate: Settings) -> None:
    result = run(defs, instance, "recall_scan")
    assert result.success
    materialized = {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()}
    assert materialized == {*SCAN, "data_incidents", "blind_window"}
    assert metadata(result, "data_incidents")["active"] == 0
    assert "| fraud_detector_1 | yes | 2 | 6 | 1 |" in metadata(result, "model_closures")["closures"]
    scores = metadata(result, "risk_scores")
    assert "| fraud_detector_1 | yes | HEALTHY | 0 | 2 |" in scores["models"] and scores["at_fail_tier"] == 0
    assert metadata(result, "risk_findings")["critical"] == 0
    [check] = result.get_asset_check_evaluations()
    assert check.check_name == "no_model_at_fail_tier" and check.passed

    writeback = metadata(result, "datahub_writeback")
    assert writeback["written"] is True and "| property |" in writeback["writes"]
    evidence = Path(writeback["evidence"])
    assert evidence.parent == estate.evidence_dir
    scan = json.loads((evidence / "findings.json").read_text())
    assert {m["name"] for m in scan["models"]} == {"fraud_detector_1", "churn_predictor_1"}
    assert "No model reaches the fail tier CRITICAL." in (evidence / "report.md").read_text()


def test_a_failed_dbt_test_is_a_failed_check_the_sensor_turns_into_a_scan(
    defs, instance, estate: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    baseline = sense(defs, instance, "dbt_test_failures").cursor
    bad_load(estate)
    build = run(defs, instance, "dbt_build")
    failed = {(c.asset_key.to_user_string(), c.check_name) for c in build.get_asset_check_evaluations() if not c.passed}
    assert ("marts/fct_transactions", "not_null_fct_transactions_unit_price") in failed

    [request] = sense(defs, instance, "dbt_test_failures", baseline).run_requests
    assert request.run_config["ops"]["model_closures"]["config"]["models"] == ["fraud_detector"], (
        "the production models whose closures in the graph hold the failed table"
    )
    rescan = run(defs, instance, "recall_rescan", run_config=request.run_config)
    assert rescan.success
    scores = metadata(rescan, "risk_scores")
    assert "fraud_detector_1" in scores["models"] and "churn_predictor_1" not in scores["models"]
    assert "| failing_assertion | 1 |" in metadata(rescan, "risk_findings")["by_detector"]
    measured = metadata(rescan, "impact_tests")
    assert measured["measured"] == 1 and "null_fraction on warehouse.marts.fct_transactions.unit_price" in (
        measured["findings"]
    ), "the failing not-null test is replayed on fraud_detector at the share of rows that failed"
    assert measured["pass"] == 1, "a few hundred NULL prices do not move the model: the replay passes"
    point_recall_at(estate, monkeypatch)
    done = CliRunner().invoke(cli, ["scan", "--json", "--model", "fraud_detector"])
    assert done.exit_code in (0, 1), done.output
    assert [_judged(m) for m in json.loads(done.output)["models"]] == [
        _judged(m) for m in rescan.output_for_node("risk_scores").contract().as_json()["models"]
    ], "the CLI and the Dagster assets run one pipeline: the same findings, measured alike, scores and tiers"
    assert "blast_radius" not in metadata(rescan, "risk_findings"), "the first pass: measured before it spreads"
    assert "warehouse.marts.fct_transactions" not in measured["blast_radius"] + scores["blast_radius"], (
        "measured harmless, the failing test endangers no one: the blast radius spreads the measured severity"
    )
    assert metadata(rescan, "datahub_writeback")["written"] is False, "only a whole-estate scan writes back"
    incidents = metadata(rescan, "data_incidents")
    assert incidents["raised"] == 1, "the sensor's rescan turns the failing test into an incident"
    assert "not_null_fct_transactions_unit_price" in incidents["incidents"]
    assert "1 of 6 features poisoned, 1 suspect" in incidents["incidents"]


def test_the_gate_refuses_the_retrain_in_the_same_run(defs, instance, estate: Settings) -> None:
    result = run(defs, instance, "retrain_models", asset_selection=[GATE_ASSET, FRAUD])
    line, _ = withheld(result, GATE_ASSET)
    assert line.startswith("NO-GO: ") and "failing_assertions" in line
    checks = {c.asset_check_key.name: c for c in result.get_asset_check_evaluations()}
    gate = checks["retrain_gate"]
    assert (gate.asset_check_key, gate.passed, gate.severity.value) == (GATE, False, "ERROR")
    measured = checks["measured_impact"]
    assert (measured.metadata["status"].value, measured.passed) == ("PASS", True), (
        "the replay of the failing test on the served version is its own check on the gate"
    )
    why = {name: value.value for name, value in gate.metadata.items()}
    assert why["verdict"] == "NO-GO" and why["model_version"].endswith("fraud_detector_1,PROD)")
    assert "failing_assertions" in why["failing_checks"].split(", "), "DataHub's record of the failed test refuses it"
    assert measured.metadata["summary"].value == "1 finding(s) replayed on the model, none blocks", (
        "the NULL prices, replayed on fraud_detector_1 at the share of rows that fail, are measured, not guessed"
    )
    assert not result.get_asset_materialization_events(), "the gate withheld itself; the retrain did not run"

    assert fraud_versions(estate) == [1]


def test_after_the_repair_the_retrain_runs_and_its_version_is_scanned(defs, instance, estate: Settings) -> None:
    watching = sense(defs, instance, "mlflow_new_versions").cursor
    raw = [key for key in defs.resolve_asset_graph().get_all_asset_keys() if key.path[0] == "raw"]
    repair = defs.resolve_implicit_global_asset_job_def().execute_in_process(instance=instance, asset_selection=raw)
    assert repair.success
    assert run(defs, instance, "dbt_build").success, "the reloaded raw layer passes every dbt test"

    retrain = run(defs, instance, "retrain_models", asset_selection=[GATE_ASSET, FRAUD, PROMOTION, INGEST])
    assert retrain.success
    checks = {c.asset_check_key.name: c for c in retrain.get_asset_check_evaluations()}
    assert checks["metric_gate"].passed and checks["metric_gate"].metadata["verdict"].value == "PASS", (
        "version 2, trained on the repaired data, is within tolerance of version 1: it is promoted"
    )
    gate = checks["retrain_gate"]
    assert gate.passed and gate.metadata["verdict"].value == "GO"
    assert checks["measured_impact"].passed and checks["measured_impact"].metadata["summary"].value == (
        "no finding upstream to replay on the model"
    )
    trained = metadata(retrain, "ml/fraud_detector")
    assert trained["version"] == 2 and trained["metric.roc_auc"] > 0.8
    assert fraud_versions(estate) == [1, 2]

    [request] = sense(defs, instance, "mlflow_new_versions", watching).run_requests
    assert request.run_key == "mlflow-fraud_detector-2"
    rescan = run(defs, instance, "recall_rescan", run_config=request.run_config)
    assert rescan.success
    scores = metadata(rescan, "risk_scores")
    assert "| fraud_detector_2 | yes | HEALTHY |" in scores["models"] and "fraud_detector_1" not in scores["models"]


def test_datahub_s_dagster_plugin_carries_the_demo_s_runs_into_the_graph(defs, instance, estate: Settings) -> None:
    """The demo location's DataHub sensor (acryl-datahub-dagster-plugin) writes the dbt build's run into the
    Lite graph, and Recall's closures name the Dagster op that writes each warehouse table."""
    started = plugin_tick(defs, instance, None)  # a run status sensor starts from the newest run
    build = run(defs, instance, "dbt_build")
    assert build.success
    plugin_tick(defs, instance, started)
    graph = LiteGraph(estate.graph, read_only=True)
    try:
        flows = {graph.get_aspects([f])[f]["dataFlowInfo"].name: f for f in graph.list_urns("dataFlow")}
        assert "dbt_build" in flows
        runs = graph.list_urns("dataProcessInstance")
        named = {graph.get_aspects([r])[r]["dataProcessInstanceProperties"].name for r in runs}
        assert build.run_id in named, "the run itself, as a process instance of the dbt_build flow"
        closures = resolve_closures(graph, load().scan.resolve)
    finally:
        graph.close()
    written = {d.name for c in closures for d in c.datasets.values()
               if "dagster: dbt_build/dbt_warehouse" in d.written_by}
    assert "warehouse.marts.fct_transactions" in written, written
    assert all(name.startswith(("warehouse.staging.", "warehouse.marts.")) for name in written)


def plugin_tick(defs: Definitions, instance: DagsterInstance, cursor: str | None) -> str | None:
    """One evaluation of the plugin's sensor; its cursor is the run status sensors' own."""
    with build_sensor_context(instance=instance, cursor=cursor, definitions=defs,
                              resources=asked_for(defs, "datahub_sensor")) as context:
        defs.resolve_sensor_def("datahub_sensor")(context)
        return context.cursor


def bad_load(settings: Settings) -> None:
    """A loader writes NULL prices for the last days of orders: dbt's not_null tests on price fail."""
    conn = ensure_warehouse(settings).connect()
    try:
        with conn, conn.cursor() as cur:
            cur.execute(
                "UPDATE raw.orders SET unit_price = NULL"
                " WHERE ordered_at > (SELECT max(ordered_at) FROM raw.orders) - interval '3 days'"
            )
    finally:
        conn.close()
