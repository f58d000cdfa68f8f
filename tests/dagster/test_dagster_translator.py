"""A team's translator names every key, group, job, sensor, schedule and check Recall puts in its deployment.

The names are the team's (a key prefix of its own, its group, its job names),
and the renamed location still works: the rescan a sensor asks for runs on the
renamed op, the scan materializes its renamed assets and the renamed check,
and the merged shards launch the renamed scan.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from dagster import AssetKey, AssetSelection, Definitions, instance_for_test

from recall_dagster.config.load import load
from recall_dagster.defs import RecallResource, RecallTranslator, recall_definitions, retrain_gate
from recall_dagster.defs.scan import scan_run_config
from recall_dagster.defs.translator import ASSETS
from recall_dagster.settings import Settings
from tests.scan.scan_estates import ingest


class Platform(RecallTranslator):
    """A team's conventions: everything under ``ml_platform/recall``, in its group, its names prefixed."""

    def group_name(self) -> str:
        return "ml_platform_recall"

    def asset_key(self, name: str) -> AssetKey:
        return AssetKey(["ml_platform", "recall", name])

    def job_name(self, name: str) -> str:
        return f"mlp_{name}"

    def sensor_name(self, name: str) -> str:
        return f"mlp_{name}"

    def schedule_name(self, name: str) -> str:
        return f"mlp_{name}"

    def check_name(self, name: str) -> str:
        return f"mlp_{name}"


@pytest.fixture(scope="module")
def general(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return ingest(tmp_path_factory.mktemp("estate") / "general.db", "estate_general.json")


def location(tmp_path: Path, graph: Path, shards: int = 1) -> Definitions:
    settings = Settings(home=tmp_path / "home", graph=str(shutil.copyfile(graph, tmp_path / "g.db")))
    return recall_definitions(RecallResource.from_settings(settings),
                              load().dagster.model_copy(update={"scan_shards": shards}), translator=Platform())


def test_every_name_is_the_translator_s(general: Path, tmp_path: Path) -> None:
    defs = location(tmp_path, general, shards=2)
    graph = defs.resolve_asset_graph()
    ours = {k for k in graph.get_all_asset_keys()}
    assert ours == {AssetKey(["ml_platform", "recall", n]) for n in ASSETS}
    assert {graph.get(k).group_name for k in ours} == {"ml_platform_recall"}
    assert AssetSelection.groups("ml_platform_recall").resolve(graph) == ours, "one group leaves them all out"
    repository = defs.get_repository_def()
    assert {j.name for j in repository.get_all_jobs() if not j.name.startswith("__")} == {
        "mlp_recall_scan", "mlp_recall_rescan", "mlp_recall_rollback", "mlp_recall_scan_shards"}
    assert {s.name for s in repository.sensor_defs} == {"mlp_datahub_assertion_results", "mlp_mlflow_new_versions",
                                                        "mlp_shard_merge"}
    assert {s.name for s in repository.schedule_defs} == {"mlp_nightly_scan"}
    assert {k.name for k in graph.asset_check_keys} == {"mlp_no_model_at_fail_tier"}
    scores = graph.get(AssetKey(["ml_platform", "recall", "risk_scores"]))
    assert {p.path[-1] for p in scores.parent_keys} == {"model_closures", "impact_tests"}, "wired by the new keys"


def test_the_renamed_rescan_runs_on_the_run_config_a_sensor_asks_for(general: Path, tmp_path: Path) -> None:
    defs = location(tmp_path, general)
    rescan = defs.resolve_job_def("mlp_recall_rescan")
    with instance_for_test() as instance:
        result = rescan.execute_in_process(instance=instance,
                                           run_config=scan_run_config(["spend_model"], Platform()))
    assert result.success
    closures = result.asset_materializations_for_node("ml_platform__recall__model_closures")
    assert closures and closures[0].metadata["models"].value >= 1
    [check] = result.get_asset_check_evaluations()
    assert check.check_name == "mlp_no_model_at_fail_tier"
    assert check.asset_key == AssetKey(["ml_platform", "recall", "risk_scores"])


def test_the_gate_and_its_checks_carry_the_translator_s_names() -> None:
    from dagster import asset

    @asset(key=["ml", "churn_model"])
    def train() -> None:
        return None

    gate, _, _ = retrain_gate(train, "churn_model", translator=Platform())
    assert {k.name for k in gate.check_keys} == {"mlp_retrain_gate", "mlp_measured_impact"}
    assert gate.key == AssetKey(["ml", "churn_model_retrain_gate"])
