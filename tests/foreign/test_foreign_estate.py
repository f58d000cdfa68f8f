"""Recall's own code location on an estate written only in the shapes of DataHub's sources.

No demo module is imported here: the team's location is their training asset,
Recall's gate in front of it, and Recall's definitions, all through the public API.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from dataclasses import replace
import os
import subprocess
import sys
from typing import Any

import pytest
from click.testing import CliRunner
from dagster import (
    AssetCheckEvaluation,
    AssetCheckKey,
    AssetKey,
    AssetSelection,
    DagsterInstance,
    Definitions,
    MaterializeResult,
    SensorResult,
    asset,
    build_sensor_context,
    define_asset_job,
    instance_for_test,
)
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata.schema_classes import (
    AssertionInfoClass,
    AssertionResultClass,
    AssertionRunEventClass,
    AssertionRunStatusClass,
    CustomAssertionInfoClass,
)
from foreign_estate import fail_the_test
from mlflow import MlflowClient

from recall_dagster.cli import cli
from recall_dagster.defs import RecallResource, RecallTranslator, recall_definitions, retrain_gate, scan_run_config
from recall_dagster.defs.model_verdict import report_verdicts, watched
from recall_dagster.graph import LiteGraph
from recall_dagster.settings import Settings

CHURN = AssetKey(["shop", "churn_model"])
GATE = AssetKey(["shop", "churn_model_retrain_gate"])
CUSTOMER_ORDERS = "urn:li:dataset:(urn:li:dataPlatform:postgres,shop.marts.customer_orders,PROD)"


@asset(key=CHURN, deps=[AssetKey(["marts", "customer_orders"])])
def train_churn() -> MaterializeResult:
    """The team's own training asset, as they wrote it."""
    return MaterializeResult(metadata={"trained": True})


def team_location(shop: Settings, overlay: str, model: str = "churn_model") -> Definitions:
    resource = RecallResource.from_settings(shop, config_path=overlay)
    retrain = define_asset_job("retrain", AssetSelection.assets(CHURN, GATE))
    mine = Definitions(assets=retrain_gate(train_churn, model), jobs=[retrain], resources={"recall": resource})
    return Definitions.merge(mine, recall_definitions(resource))


@pytest.fixture
def instance():
    with instance_for_test() as instance:
        yield instance


def retrain(defs: Definitions, instance: DagsterInstance) -> tuple[dict[str, Any], bool]:
    """Run the team's retrain job: the gate check's metadata, and whether the training ran (the gate is
    materialized exactly when it lets the retrain through)."""
    result = defs.resolve_job_def("retrain").execute_in_process(instance=instance, raise_on_error=False)
    assert result.success, "a refusal skips the retrain; it fails nothing"
    materialized = {e.asset_key for e in result.get_asset_materialization_events()}
    [check] = [c for c in result.get_asset_check_evaluations() if c.asset_check_key == AssetCheckKey(GATE, "retrain_gate")]
    assert (GATE in materialized) == check.passed == (CHURN in materialized)
    return {k: v.value for k, v in check.metadata.items()}, CHURN in materialized


def verdict_on(instance: DagsterInstance, training: AssetKey) -> AssetCheckEvaluation:
    """The latest evaluation of Recall's verdict check on ``training``, whoever recorded it."""
    key = AssetCheckKey(training, "recall_verdict")
    record = instance.event_log_storage.get_latest_asset_check_execution_by_key([key])[key]
    assert record.event is not None and record.event.dagster_event is not None
    return record.event.dagster_event.event_specific_data


def sense(defs: Definitions, instance: DagsterInstance, name: str, cursor: str | None) -> SensorResult:
    with build_sensor_context(instance=instance, cursor=cursor, definitions=defs, resources=defs.resources) as ctx:
        result = defs.resolve_sensor_def(name)(ctx)
    assert isinstance(result, SensorResult)
    return result


def scan_json(shop: Settings, overlay: str, *flags: str) -> dict[str, Any]:
    args = ["scan", "--json", "--graph", shop.graph, "--config", overlay, "--as-of", "2025-06-01T00:00:00Z", *flags]
    done = CliRunner().invoke(cli, args, env={"RECALL_HOME": str(shop.home)})
    assert done.exit_code in (0, 1), done.output
    return json.loads(done.output)


def test_a_scan_picks_models_by_the_registry_s_names(shop: Settings, overlay: str) -> None:
    def names(*flags: str) -> set[str]:
        return {m["name"] for m in scan_json(shop, overlay, *flags)["models"]}

    assert names("--model", "churn_model") == {"churn_model_1", "churn_model_2"}, "both serve or are aliased"
    assert names("--model", "churn_model/1", "--model", "ltv_model") == {"churn_model_1", "ltv_model_1"}
    urn = "urn:li:mlModel:(urn:li:dataPlatform:mlflow,churn_model_2,PROD)"
    assert names("--model", urn) == {"churn_model_2"}
    args = ["scan", "--graph", shop.graph, "--model", "churn_model/9"]
    unknown = CliRunner().invoke(cli, args, env={"RECALL_HOME": str(shop.home)})
    assert unknown.exit_code == 2 and "no model churn_model/9" in unknown.output


def test_the_terminal_report_groups_a_registered_model_s_versions(shop: Settings, overlay: str) -> None:
    fail_the_test(shop)
    args = ["scan", "--graph", shop.graph, "--config", overlay, "--as-of", "2025-06-01T00:00:00Z"]
    done = CliRunner().invoke(cli, args, env={"RECALL_HOME": str(shop.home)}, terminal_width=200)
    lines = done.output.splitlines()
    header = next(i for i, line in enumerate(lines) if line.strip().startswith("churn_model"))
    assert [lines[header + 1].split()[0], lines[header + 2].split()[0]] in (["v1", "v2"], ["v2", "v1"])
    shared = [line for line in lines if line.startswith("  churn_model") and "failing_assertion" in line]
    assert len(shared) == 1 and "churn_model v1, v2 failing_assertion" in shared[0].replace("v2, v1", "v1, v2"), (
        "a finding both versions share is one line naming both")
    json_models = {m["name"] for m in scan_json(shop, overlay)["models"]}
    assert {"churn_model_1", "churn_model_2"} <= json_models, "the JSON keeps one entry per version"


def test_the_scan_reads_stock_shapes(shop: Settings, overlay: str) -> None:
    models = {m["name"]: m for m in scan_json(shop, overlay)["models"]}
    assert set(models) == {"churn_model_1", "churn_model_2", "ltv_model_1"}
    endpoint = "urn:li:mlModelDeployment:(urn:li:dataPlatform:vertexai,churn-endpoint,PROD)"
    assert models["churn_model_1"]["live_deployments"] == [endpoint], "the endpoint records serving version 1"
    assert models["churn_model_2"]["live_deployments"] == [], "listed under v2 too, but it serves v1"
    lagging = [f for f in models["churn_model_1"]["findings"] if f["detector"] == "version_mismatch"]
    assert lagging and "production version is churn_model_2" in lagging[0]["message"]
    orphan = [(f["detector"], f["severity"]) for f in models["ltv_model_1"]["findings"]]
    assert ("orphaned_feature", "CRITICAL") in orphan, "a feature URN nobody catalogued"


def test_the_scan_says_what_it_could_verify(shop: Settings, overlay: str) -> None:
    coverage = scan_json(shop, overlay)["coverage"]
    assert coverage["models"] == {
        "total": 3, "with_features": 1, "with_training_inputs": 2, "with_serving_path": 1, "with_live_deployments": 2,
    }, "the mlflow source records no features; only the feast-fed ltv model has a serving path"
    assert coverage["datasets"] == {
        "total": 2, "with_schema": 2, "with_freshness": 2, "with_owners": 2, "with_assertions": 1,
        "with_column_lineage": 1,
    }


def test_the_recall_location_scans_and_the_gate_passes_then_blocks(shop: Settings, overlay: str, instance) -> None:
    defs = team_location(shop, overlay)
    scanned = defs.resolve_job_def("recall_scan").execute_in_process(instance=instance, raise_on_error=False)
    assert scanned.success
    for event in scanned.get_asset_materialization_events():
        said = event.materialization.metadata
        assert next(iter(said)) == "summary" and "\n" not in str(said["summary"].value), (
            f"{event.asset_key.to_user_string()} opens with one plain line before any detail")
    assert all(c.description and "\n" not in c.description for c in scanned.get_asset_check_evaluations())
    closures = next(e for e in scanned.get_asset_materialization_events() if e.asset_key == AssetKey("model_closures"))
    assert closures.materialization.metadata["production_models"].value == 3

    checks = watched(defs.get_repository_def().asset_graph, RecallTranslator())
    assert checks == [(AssetCheckKey(CHURN, "recall_verdict"), "churn_model")], "retrain_gate adds the check"
    assert report_verdicts(instance, scanned.output_for_node("risk_scores"), checks) == 1
    healthy = verdict_on(instance, CHURN)
    assert healthy.passed == (healthy.metadata["tier"].value == "HEALTHY"), "passed only at the healthy tier"
    assert healthy.description.startswith(
        f"{healthy.metadata['version'].value} {healthy.metadata['tier'].value} {healthy.metadata['score'].value}: ")

    result = defs.resolve_job_def("retrain").execute_in_process(instance=instance, raise_on_error=False)
    assert CHURN in {e.asset_key for e in result.get_asset_materialization_events()}
    [judged] = [c for c in result.get_asset_check_evaluations() if c.check_name == "recall_verdict"]
    assert judged.asset_key == CHURN and (judged.passed, judged.description) == (healthy.passed, healthy.description), (
        "a run that trains the model judges it there and then, as the scan did")
    gate, trained = retrain(defs, instance)
    assert gate["verdict"] == "GO" and gate["model_version"].endswith("churn_model_2,PROD)") and trained

    fail_the_test(shop)
    result = defs.resolve_job_def("retrain").execute_in_process(instance=instance, raise_on_error=False)
    assert not [c for c in result.get_asset_check_evaluations() if c.check_name == "recall_verdict"], (
        "the training never ran: its verdict check is skipped, not failed")
    gate, trained = retrain(defs, instance)
    assert gate["verdict"] == "NO-GO" and not trained
    assert {"failing_assertions", "contaminated_version"} <= set(gate["failing_checks"].split(", "))

    rescanned = defs.resolve_job_def("recall_scan").execute_in_process(instance=instance, raise_on_error=False)
    window = next(e for e in rescanned.get_asset_materialization_events() if e.asset_key == AssetKey("blind_window"))
    versions = window.materialization.metadata["versions"].value
    assert "churn_model_2" in versions and "CONTAMINATED" in versions and "CLEAN" in versions
    assert "roll back to churn_model_1: the newest version trained outside every blind window" in versions, (
        "the table says what to do, not only a version's name")
    scores = next(e for e in rescanned.get_asset_materialization_events() if e.asset_key == AssetKey("risk_scores"))
    report_verdicts(instance, rescanned.output_for_node("risk_scores"), checks)
    at_risk = verdict_on(instance, CHURN)
    version = at_risk.metadata["version"].value
    assert not at_risk.passed and at_risk.description == f"{version} " + scores.materialization.metadata[
        f"verdict: {version}"].value, "the model's own check says in one line what the scores say of its version"
    assert at_risk.description.startswith(f"{version} {at_risk.metadata['tier'].value}")


def test_a_model_the_graph_does_not_know_is_unverified_and_blocks(shop: Settings, overlay: str, instance) -> None:
    gate, trained = retrain(team_location(shop, overlay, model="never_registered"), instance)
    assert gate["verdict"] == "UNVERIFIED" and not trained
    assert "no registered model or version 'never_registered'" in gate["reason"]


def test_the_datahub_sensor_rescans_what_a_new_failure_reaches(shop: Settings, overlay: str, instance) -> None:
    defs = team_location(shop, overlay)
    first = sense(defs, instance, "datahub_assertion_results", None)
    assert first.run_requests == [] and first.cursor, "results older than the sensor are the nightly scan's"
    quiet = sense(defs, instance, "datahub_assertion_results", first.cursor)
    assert quiet.run_requests == []
    fail_the_test(shop)
    result = sense(defs, instance, "datahub_assertion_results", first.cursor)
    [request] = result.run_requests
    assert request.run_config == scan_run_config(models=["churn_model", "ltv_model"])
    assert request.tags["recall/trigger"] == "datahub_assertion"
    assert sense(defs, instance, "datahub_assertion_results", result.cursor).run_requests == []


def report(shop: Settings, assertion: str, at_ms: int, result: str) -> None:
    """The team's data-quality tool checks customer_orders and reports to DataHub, stamped ``at_ms``."""
    urn = f"urn:li:assertion:{assertion}"
    with closing(LiteGraph(shop.graph)) as graph:
        graph.emit_mcps([
            MetadataChangeProposalWrapper(entityUrn=urn, aspect=AssertionInfoClass(
                type="CUSTOM", customAssertion=CustomAssertionInfoClass(type="dq", entity=CUSTOMER_ORDERS))),
            MetadataChangeProposalWrapper(entityUrn=urn, aspect=AssertionRunEventClass(
                timestampMillis=at_ms, runId=f"{assertion}@{at_ms}", asserteeUrn=CUSTOMER_ORDERS, assertionUrn=urn,
                status=AssertionRunStatusClass.COMPLETE, result=AssertionResultClass(type=result))),
        ])


def test_the_datahub_sensor_rescans_once_for_each_failure_stamped_at_its_edge_or_late(
    shop: Settings, overlay: str, instance
) -> None:
    defs = team_location(shop, overlay)
    cursor = sense(defs, instance, "datahub_assertion_results", None).cursor
    edge = 1748728800000  # the newest result the sensor has seen: the team's dbt test, passing
    launched = []
    for assertion, at in (("rows-at-the-edge", edge), ("rows-late", edge - 3_600_000), ("rows-at-the-edge", edge + 1)):
        report(shop, assertion, at, "FAILURE")
        tick = sense(defs, instance, "datahub_assertion_results", cursor)
        [request] = tick.run_requests
        assert request.run_config == scan_run_config(models=["churn_model", "ltv_model"])
        again = sense(defs, instance, "datahub_assertion_results", tick.cursor)
        assert again.run_requests == [], f"{assertion} at {at} is handled once"
        launched.append(request.run_key)
        cursor = again.cursor
    fail_the_test(shop)
    [request] = sense(defs, instance, "datahub_assertion_results", cursor).run_requests
    assert len(set(launched + [request.run_key])) == 4, "each failure its own rescan"
    report(shop, "rows-late", edge + 2, "SUCCESS")
    assert sense(defs, instance, "datahub_assertion_results", cursor).run_requests == [request], (
        "a passing result launches nothing; the failure not yet handled still does")


def watching(shop: Settings, overlay: str, instance: DagsterInstance) -> tuple[MlflowClient, Definitions, SensorResult]:
    """The team's registry holding churn_model version 1, and the MLflow sensor's first tick on it."""
    client = MlflowClient(tracking_uri=shop.mlflow_uri, registry_uri=shop.mlflow_uri)
    client.create_registered_model("churn_model")
    client.create_model_version("churn_model", source="file:///nowhere/1")
    defs = team_location(shop, overlay)
    return client, defs, sense(defs, instance, "mlflow_new_versions", None)


def test_the_mlflow_sensor_scans_a_new_version_once_datahub_holds_it(shop: Settings, overlay: str, instance) -> None:
    client, defs, first = watching(shop, overlay, instance)
    assert first.run_requests == [] and first.cursor

    client.create_model_version("churn_model", source="file:///nowhere/2")
    result = sense(defs, instance, "mlflow_new_versions", first.cursor)
    [request] = result.run_requests
    assert request.run_config == scan_run_config(models=["churn_model/2"]) and request.run_key == "mlflow-churn_model-2"

    client.create_model_version("churn_model", source="file:///nowhere/3")
    waiting = sense(defs, instance, "mlflow_new_versions", result.cursor)
    assert waiting.run_requests == [] and waiting.cursor == result.cursor
    assert "waiting for DataHub to ingest churn_model/3" in (waiting.skip_reason or "")

    burst = sense(defs, instance, "mlflow_new_versions", first.cursor)  # 2 is ingested, 3 is not: 2 alone
    assert [r.run_config for r in burst.run_requests] == [scan_run_config(models=["churn_model/2"])]


def restamp(shop: Settings, name: str, version: int, at_ms: int) -> None:
    """As a registry whose clock lags records it: ``name`` version ``version`` registered at ``at_ms``."""
    with closing(sqlite3.connect(shop.mlflow_uri.removeprefix("sqlite:///"))) as db, db:
        db.execute("UPDATE model_versions SET creation_time = ? WHERE name = ? AND version = ?", (at_ms, name, version))


def test_the_mlflow_sensor_scans_once_each_version_stamped_at_its_cursor_or_before(
    shop: Settings, overlay: str, instance
) -> None:
    client, defs, first = watching(shop, overlay, instance)
    edge = client.get_model_version("churn_model", "1").creation_timestamp
    client.create_model_version("churn_model", source="file:///nowhere/2")
    restamp(shop, "churn_model", 2, edge)
    tick = sense(defs, instance, "mlflow_new_versions", first.cursor)
    assert [r.run_config for r in tick.run_requests] == [scan_run_config(models=["churn_model/2"])]
    assert sense(defs, instance, "mlflow_new_versions", tick.cursor).run_requests == []

    client.create_registered_model("ltv_model")
    client.create_model_version("ltv_model", source="file:///nowhere/ltv")
    restamp(shop, "ltv_model", 1, edge - 3_600_000)  # arrives now, stamped before anything the sensor handled
    late = sense(defs, instance, "mlflow_new_versions", tick.cursor)
    assert [r.run_config for r in late.run_requests] == [scan_run_config(models=["ltv_model/1"])]
    assert sense(defs, instance, "mlflow_new_versions", late.cursor).run_requests == []


def test_a_burst_of_registrations_is_one_rescan(shop: Settings, overlay: str, instance) -> None:
    client, defs, first = watching(shop, overlay, instance)
    client.create_model_version("churn_model", source="file:///nowhere/2")
    [request] = sense(defs, instance, "mlflow_new_versions", json.dumps({"versions": {}})).run_requests
    assert request.run_config == scan_run_config(models=["churn_model/1", "churn_model/2"])
    assert request.run_key == "mlflow-churn_model-1+churn_model-2"


def test_a_sensor_cursor_an_older_recall_kept_as_a_time_loses_nothing(shop: Settings, overlay: str, instance) -> None:
    """Upgraded under a running deployment: what came after the old cursor's time is still new, once."""
    client, defs, _ = watching(shop, overlay, instance)
    before = str(client.get_model_version("churn_model", "1").creation_timestamp - 1)
    [request] = sense(defs, instance, "mlflow_new_versions", before).run_requests
    assert request.run_config == scan_run_config(models=["churn_model/1"])
    fail_the_test(shop)
    assert len(sense(defs, instance, "datahub_assertion_results", "1748728800000").run_requests) == 1
    assert sense(defs, instance, "datahub_assertion_results", "1748734200000").run_requests == []


def test_the_cli_blind_window_and_gate_say_what_they_could_not_verify(shop: Settings, overlay: str) -> None:
    fail_the_test(shop)
    env = {"RECALL_HOME": str(shop.home)}
    done = CliRunner().invoke(cli, ["blind-window", "--json", "--graph", shop.graph, "--config", overlay], env=env)
    window = json.loads(done.output)
    assert done.exit_code == 1, "churn_model_2 holds the production alias, contaminated: it serves whatever loads it"
    assert window["contaminated_live"] == ["churn_model_2"] and window["unknown_live"] == ["ltv_model_1"]
    assert window["coverage"] == {
        "versions": 3, "judged": 2, "unknown": {"ltv_model_1": "no training run is recorded for this version"},
        "unlinked_failing": [],
    }, "the one failing test reaches models: none is left unlinked"
    hit = {m["name"]: (m["severity"], m["summary"]) for m in window["causes"][0]["blast_radius"]["models"]}
    assert hit == {
        "churn_model_1": ("HIGH", "1 of 3 training columns poisoned (it records no features)"),
        "churn_model_2": ("MEDIUM", "1 of 3 training columns poisoned (it records no features)"),  # no endpoint
        "ltv_model_1": ("HIGH", "1 of 3 features poisoned"),
    }, "a model with no features is weighed by the training columns it read"
    done = CliRunner().invoke(cli, ["gate", "ltv_model", "--json", "--graph", shop.graph, "--config", overlay], env=env)
    gate = json.loads(done.output)
    assert gate["coverage"]["skipped"]["row_count_drop"] == "its training run recorded no row counts"
    assert gate["coverage"]["measured"] + len(gate["coverage"]["skipped"]) == gate["coverage"]["checks"]


RUN_WITHOUT_THE_DEMO = """
import sys
from dagster import instance_for_test
from recall_dagster.defs import RecallResource, recall_definitions
from recall_dagster.settings import Settings
settings = Settings(home=__import__("pathlib").Path(sys.argv[1]), graph=sys.argv[2])
defs = recall_definitions(RecallResource.from_settings(settings, config_path=sys.argv[3]))
with instance_for_test() as instance:
    assert defs.resolve_job_def("recall_scan").execute_in_process(instance=instance).success
print(sorted(m for m in sys.modules if m.split(".")[0] in ("seed", "ml_models")))
"""


def test_the_recall_location_runs_with_no_demo_module_imported(shop: Settings, overlay: str, tmp_path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", RUN_WITHOUT_THE_DEMO, str(shop.home), shop.graph, overlay],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_the_dagster_scan_waits_for_a_cli_write_back_only_to_write_back(shop: Settings, overlay: str, instance) -> None:
    """A nightly run and a CLI ``scan --write`` on one home: the run reads, detects and scores beside it, and
    its write-back takes its turn."""
    impatient = replace(shop, lock_wait_seconds=0.2)
    defs = recall_definitions(RecallResource.from_settings(impatient, config_path=overlay))
    with impatient.writing("writeback", "recall scan --write, from the command line"):
        blocked = defs.resolve_job_def("recall_scan").execute_in_process(instance=instance, raise_on_error=False)
    assert not blocked.success
    failures = {e.step_key: str(e.step_failure_data.error) for e in blocked.get_step_failure_events()}
    assert list(failures) == ["datahub_writeback"], "closures, findings and scores need no other writer's turn"
    assert "datahub_writeback is busy: another process has held" in failures["datahub_writeback"]
    assert defs.resolve_job_def("recall_scan").execute_in_process(instance=instance, raise_on_error=False).success
