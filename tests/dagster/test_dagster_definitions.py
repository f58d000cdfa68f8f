"""The Definitions load fast, start nothing, and hold every asset, check, sensor, schedule and job.

Two code locations: Recall's own (the product) and the demo estate's, built on Recall's public API.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
import yaml
from dagster import AssetKey, DefaultSensorStatus, Definitions, EnvVar

from ml_models.query import build_training_query
from ml_models.registry import load_registry
from recall_dagster import definitions as recall_location
from recall_dagster.defs import recall_definitions
from recall_dagster.defs.resources import RecallResource
from recall_dagster.scan_markdown import METADATA_ROWS, table
from recall_dagster.settings import REPO_ROOT, Settings
from seed.dagster import definitions as demo_location
from seed.stack.dbt import PROJECT_DIR

SCAN = ["model_closures", "risk_findings", "impact_tests", "risk_scores", "datahub_writeback"]
MODELS = ["churn_predictor", "demand_forecaster", "fraud_detector"]


def keys(definitions: Definitions) -> set[str]:
    return {k.to_user_string() for k in definitions.resolve_asset_graph().get_all_asset_keys()}


def test_every_asset_is_present(definitions) -> None:
    found = keys(definitions)
    assert {f"raw/{t}" for t in ("orders", "transactions", "device_signals", "fraud_labels")} <= found
    assert {"staging/stg_orders", "marts/fct_transactions", "marts/dim_customers"} <= found
    assert {f"ml/{m}" for m in MODELS} <= found
    assert {"datahub_metadata", *SCAN, "data_incidents", "blind_window"} <= found


def test_recall_alone_holds_the_scan_the_incidents_and_no_demo_asset(recall_defs) -> None:
    assert keys(recall_defs) == {*SCAN, "data_incidents", "blind_window"}
    repository = recall_defs.get_repository_def()
    assert {s.name for s in repository.sensor_defs} == {"datahub_assertion_results", "mlflow_new_versions"}
    assert {s.name: s.cron_schedule for s in repository.schedule_defs} == {"nightly_scan": "0 2 * * *"}


def test_the_scan_and_incidents_run_after_what_recall_yaml_names(tmp_path: Path, defs_settings: Settings) -> None:
    overlay = tmp_path / "recall.yaml"
    overlay.write_text("dagster:\n  scan_after: [datahub/ingest]\n")
    resource = RecallResource.from_settings(defs_settings, config_path=str(overlay))
    graph = recall_definitions(resource).resolve_asset_graph()
    for key in ("model_closures", "data_incidents"):
        assert {p.to_user_string() for p in graph.get(AssetKey(key)).parent_keys} == {"datahub/ingest"}
    assert {p.to_user_string() for p in graph.get(AssetKey("blind_window")).parent_keys} == {"data_incidents"}


def test_in_the_demo_recall_sits_downstream_of_the_ingestion_that_feeds_the_graph(defs_settings: Settings) -> None:
    """The global lineage an operator watches runs raw → dbt → training → DataHub ingestion → Recall's scan and
    incidents: Recall is no island (the demo's recall.yaml names its ingestion in dagster.scan_after)."""
    from seed.lifecycle import DEMO_CONFIG

    resource = RecallResource.from_settings(defs_settings, config_path=str(DEMO_CONFIG))
    recall = recall_definitions(resource).resolve_asset_graph()
    for key in ("model_closures", "data_incidents"):
        assert {p.to_user_string() for p in recall.get(AssetKey(key)).parent_keys} == {"datahub_metadata"}
    demo = demo_location.build_definitions(defs_settings).resolve_asset_graph()
    ingested = {p.to_user_string() for p in demo.get(AssetKey("datahub_metadata")).parent_keys}
    assert {f"ml/{m}_promotion" for m in MODELS} <= ingested and "feast/fraud_transaction_features" in ingested


def test_the_scan_is_a_chain(definitions) -> None:
    graph = definitions.resolve_asset_graph()
    parents = {k: {p.to_user_string() for p in graph.get(AssetKey(k)).parent_keys} for k in SCAN}
    assert parents == {
        "model_closures": set(),
        "risk_findings": {"model_closures"},
        "impact_tests": {"model_closures", "risk_findings"},
        "risk_scores": {"model_closures", "impact_tests"},
        "datahub_writeback": {"model_closures", "risk_scores"},
    }
    ingest = {p.to_user_string() for p in graph.get(AssetKey("datahub_metadata")).parent_keys}
    views = {f"feast/{t.name}" for t in load_registry().feature_tables}
    assert {f"ml/{m}_promotion" for m in MODELS} | views == ingest, (
        "dbt ingests in its own step; this asset carries the promotions and what Feast serves"
    )
    for view in views:
        upstream = {p.path[0] for p in graph.get(AssetKey(view.split("/"))).parent_keys}
        assert upstream and upstream <= {"marts", "staging"}, "a feature view is served after the dbt models it reads"
    for model in MODELS:
        promotion = {p.to_user_string() for p in graph.get(AssetKey(["ml", f"{model}_promotion"])).parent_keys}
        assert promotion == {f"ml/{model}"}, "the alias moves after the training, behind its metric gate"


def test_each_model_trains_behind_its_gate_after_the_tables_its_query_reads(definitions) -> None:
    graph = definitions.resolve_asset_graph()
    registry = load_registry()
    for spec in registry.models:
        reads = {read.table.name for read in build_training_query(spec, registry).reads}
        gate = AssetKey(["ml", f"{spec.name}_retrain_gate"])
        parents = graph.get(AssetKey(["ml", spec.name])).parent_keys
        assert {p.path[-1] for p in parents - {gate}} == reads and gate in parents
        assert {p.path[-1] for p in graph.get(gate).parent_keys} == reads, "the gate judges after what training reads"


def test_dbt_tests_are_checks_and_every_retrain_has_a_gate_that_withholds_it(definitions) -> None:
    checks = {c.key.to_user_string(): c for c in definitions.resolve_asset_graph().asset_check_nodes}
    assert "marts/fct_transactions:not_null_fct_transactions_unit_price" in checks
    assert sum(1 for c in checks.values() if c.key.asset_key.path[0] in ("staging", "marts")) >= 40
    for model in MODELS:
        gate = AssetKey(["ml", f"{model}_retrain_gate"])
        [spec] = definitions.resolve_assets_def(gate).specs
        assert spec.skippable, "a refusal withholds the gate: the retrain behind it is skipped, not failed"
        assert {f"{gate.to_user_string()}:{name}" for name in ("retrain_gate", "measured_impact")} <= set(checks)
        assert checks[f"ml/{model}:metric_gate"].blocking, "a regressed candidate is never promoted"
    assert not checks["risk_scores:no_model_at_fail_tier"].blocking
    assert not any(c.blocking for k, c in checks.items() if k.startswith(("staging/", "marts/"))), (
        "the demo's dbt tests never stop a run; Recall's gates read every upstream test's result"
    )


def test_sensors_schedules_and_jobs(definitions) -> None:
    repository = definitions.get_repository_def()
    assert {s.name for s in repository.sensor_defs} == {
        "dbt_test_failures", "mlflow_new_versions", "datahub_assertion_results", "datahub_sensor"
    }
    schedules = {s.name: (s.cron_schedule, s.job_name) for s in repository.schedule_defs}
    assert schedules == {"nightly_scan": ("0 2 * * *", "recall_scan"), "daily_dbt_build": ("0 5 * * *", "dbt_build")}
    jobs = {j.name for j in repository.get_all_jobs()}
    assert {"recall_scan", "recall_rescan", "dbt_build", "retrain_models"} <= jobs
    build = {k.to_user_string() for k in definitions.resolve_job_def("dbt_build").asset_layer.selected_asset_keys}
    assert {f"feast/{t.name}" for t in load_registry().feature_tables} | {"datahub_metadata"} <= build
    scan_job = definitions.resolve_job_def("recall_scan")
    lifecycle = {"data_incidents", "blind_window"}
    assert {k.to_user_string() for k in scan_job.asset_layer.selected_asset_keys} == {*SCAN, *lifecycle}
    rescan = definitions.resolve_job_def("recall_rescan")
    assert {k.to_user_string() for k in rescan.asset_layer.selected_asset_keys} == {*SCAN, *lifecycle}
    retrain = definitions.resolve_job_def("retrain_models")
    selected = {k.to_user_string() for k in retrain.asset_layer.selected_asset_keys}
    assert {f"ml/{m}{part}" for m in MODELS for part in ("", "_retrain_gate", "_promotion")} | {
        "datahub_metadata"
    } == selected


def test_loading_parses_dbt_under_recall_home_and_starts_no_service(definitions, defs_settings: Settings) -> None:
    assert (defs_settings.dbt_dir / "dagster" / "manifest.json").exists()
    assert not (PROJECT_DIR / "target").exists(), "dbt artifacts never land in the checked-in project"
    assert not defs_settings.pg_data.exists(), "the warehouse starts in a run, not at load time"
    assert not Path(defs_settings.graph).exists() and not defs_settings.mlflow_dir.exists()


def test_resources_are_bound_to_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("RECALL_HOME", str(tmp_path))
    monkeypatch.setenv("RECALL_GRAPH", "https://datahub.example.com:8080")
    monkeypatch.setenv("DATAHUB_GMS_TOKEN", "secret")
    monkeypatch.setenv("RECALL_WAREHOUSE_URL", "postgresql://recall@db.example.com/warehouse")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "https://mlflow.example.com")
    monkeypatch.delenv("RECALL_CONFIG", raising=False)
    resource = RecallResource.from_env()
    assert resource.graph.token == EnvVar("DATAHUB_GMS_TOKEN") and resource.home.path == EnvVar("RECALL_HOME")
    assert resource.home.config_path == "", "an unset variable leaves the shipped default"
    with resource.process_config_and_initialize_cm() as resolved:
        assert resolved.settings() == Settings.from_env()


def test_the_workspace_serves_recall_and_the_demo_as_two_locations(
    monkeypatch: pytest.MonkeyPatch, defs_settings: Settings
) -> None:
    workspace = yaml.safe_load((REPO_ROOT / "workspace.yaml").read_text())
    targets = {t["python_module"]["location_name"]: t["python_module"] for t in workspace["load_from"]}
    assert targets["recall"]["module_name"] == "recall_location.definitions", "Recall declared as a component"
    assert targets["demo_estate"]["module_name"] == "seed.dagster.definitions"
    monkeypatch.setenv("RECALL_HOME", str(defs_settings.home))
    monkeypatch.delenv("RECALL_CONFIG", raising=False)
    monkeypatch.syspath_prepend(str(REPO_ROOT / targets["recall"]["working_directory"]))
    declared = importlib.import_module(targets["recall"]["module_name"])
    recall, demo = getattr(declared, targets["recall"]["attribute"])(), demo_location.defs()
    assert keys(recall) == keys(recall_location.defs()) == {*SCAN, "data_incidents", "blind_window"}, (
        "the component declares what the product's own location holds")
    assert {s.default_status for s in recall.sensors} == {DefaultSensorStatus.RUNNING}, "automation: running"
    assert {"ml/fraud_detector", "ml/fraud_detector_retrain_gate", "datahub_metadata"} <= keys(demo)
    assert not keys(recall) & keys(demo), "no asset is defined in both locations"
    from dagster.components.core.component_tree import ComponentTree

    project = ComponentTree.for_project(REPO_ROOT / targets["recall"]["working_directory"])
    assert project.code_location_name == "recall", "the name it is served under: Dagster warns of no mismatch"


def test_asset_metadata_tables_stay_bounded_and_say_what_they_left_out() -> None:
    rows = [(f"model_{i}", i) for i in range(METADATA_ROWS + 25)]
    bounded = table(("model", "score"), rows)
    assert bounded.count("| model_") == METADATA_ROWS and "… and 25 more row(s)" in bounded
    assert table(("model", "score"), rows, limit=None).count("| model_") == METADATA_ROWS + 25, "evidence keeps all"


def test_merged_into_a_team_s_location_recall_is_building_blocks_not_a_takeover(recall_defs) -> None:
    from dagster import AssetSelection, DefaultScheduleStatus, DefaultSensorStatus, asset, define_asset_job
    from dagster import multiprocess_executor

    @asset(key=["team", "orders"])
    def orders() -> None: ...

    team = Definitions(assets=[orders], executor=multiprocess_executor,
                       jobs=[define_asset_job("team_daily", AssetSelection.all() - AssetSelection.groups("recall"))])
    merged = Definitions.merge(team, recall_defs)
    assert merged.executor is multiprocess_executor, "the team's jobs run as the team's own do"
    assert {s.default_status for s in merged.sensors} == {DefaultSensorStatus.STOPPED}, "nothing starts by itself"
    assert {s.default_status for s in merged.schedules} == {DefaultScheduleStatus.STOPPED}
    graph = merged.resolve_asset_graph()
    recall_keys = {k for k in graph.get_all_asset_keys() if k != AssetKey(["team", "orders"])}
    assert recall_keys and {graph.get(k).group_name for k in recall_keys} == {"recall"}, "one group of its own"
    job = merged.resolve_job_def("team_daily")
    assert set(job.asset_layer.executable_asset_keys) == {AssetKey(["team", "orders"])}, (
        "a team job over everything but that group holds none of Recall's assets")


def test_recall_s_own_location_starts_its_reactions() -> None:
    own = recall_location.defs()
    assert {s.default_status for s in own.sensors} == {DefaultSensorStatus.RUNNING}


def test_the_resource_honours_the_lock_wait(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("RECALL_HOME", str(tmp_path))
    monkeypatch.setenv("RECALL_LOCK_WAIT_SECONDS", "7.5")
    with RecallResource.from_env().process_config_and_initialize_cm() as resolved:
        assert resolved.settings().lock_wait_seconds == 7.5


def test_every_sensor_schedule_job_and_check_of_recall_says_what_it_does(definitions) -> None:
    """The Dagster UI lists each, Recall's and the demo's, with its description: none reads "No description
    provided"."""
    repo = definitions.get_repository_def()
    described = {f"sensor {s.name}": s.description for s in repo.sensor_defs}
    described |= {f"schedule {s.name}": s.description for s in repo.schedule_defs}
    described |= {f"job {j.name}": j.description for j in repo.get_all_jobs() if not j.name.startswith("__")}
    described |= {f"check {spec.key.to_user_string()}": spec.description
                  for a in repo.assets_defs_by_key.values() for spec in a.check_specs
                  if "recall" in (a.group_names_by_key.get(spec.asset_key) or "")}
    assert described and not [what for what, text in described.items() if not text], described


def test_with_a_dbt_recipe_what_dagster_dbt_ran_reaches_the_graph_before_each_scan(
    tmp_path: Path, defs_settings: Settings
) -> None:
    """``dagster.dbt_recipe`` (``recall init`` writes it) adds ``dbt_metadata`` downstream of the team's dbt assets
    and first in both scan jobs; a recipe whose manifest is not there fails that step with the reason alone."""
    from dagster import AssetCheckSpec, AssetSpec, DagsterInstance, materialize, multi_asset

    @multi_asset(specs=[AssetSpec("raw_orders"), AssetSpec("daily_orders", deps=["raw_orders"])],
                 check_specs=[AssetCheckSpec("not_null_raw_orders_amount", asset="raw_orders")])
    def team_dbt():  # noqa: ANN202 - never run here
        yield from ()

    recipe = tmp_path / "recipes" / "dbt.yml"
    recipe.parent.mkdir()
    recipe.write_text(yaml.safe_dump({"source": {"type": "dbt", "config": {
        "manifest_path": str(tmp_path / "target" / "manifest.json"), "target_platform": "duckdb"}},
        "sink": {"type": "console"}}))
    overlay = tmp_path / "recall.yaml"
    overlay.write_text(f"dagster:\n  dbt_recipe: {recipe}\n")
    resource = RecallResource.from_settings(defs_settings, config_path=str(overlay))
    merged = Definitions.merge(Definitions(assets=[team_dbt]), recall_definitions(resource, dbt=team_dbt))
    graph = merged.resolve_asset_graph()
    ingest = AssetKey("dbt_metadata")
    assert graph.get(ingest).parent_keys == {AssetKey("raw_orders"), AssetKey("daily_orders")}, (
        "Recall sits downstream of what it reads in the lineage")
    assert ingest in graph.get(AssetKey("model_closures")).parent_keys
    assert ingest in graph.get(AssetKey("data_incidents")).parent_keys
    for job in ("recall_scan", "recall_rescan"):
        assert ingest in merged.resolve_job_def(job).asset_layer.executable_asset_keys
    sensor = merged.resolve_sensor_def("dbt_test_failures")
    assert sensor.description.endswith("a dbt test that just ran in Dagster.")

    done = materialize([merged.resolve_assets_def(ingest)], instance=DagsterInstance.ephemeral(),
                       raise_on_error=False)
    [failure] = [e for e in done.all_events if e.is_step_failure]
    said = failure.step_failure_data.error.message
    assert "dbt's artifacts did not reach the graph: the dbt recipe's manifest" in said, said
    assert "Traceback" not in said and not (defs_settings.home / "ingest").exists(), "refused before installing"
