"""On the broken demo estate the fraud detector's retrain is refused by its gate; after heal it runs; a retrain on
regressed feature code is trained but never promoted."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest
from dagster import AssetKey, Definitions, instance_for_test
from mlflow import MlflowClient

from recall_dagster.progress import Progress
from recall_dagster.settings import Settings
from tests.conftest import built_estate
from tests.gate_runs import withheld
from seed import injuries, lifecycle
from seed.dagster.definitions import build_definitions

pytestmark = [pytest.mark.stack, pytest.mark.slow]

FRAUD = AssetKey(["ml", "fraud_detector"])
GATE = AssetKey(["ml", "fraud_detector_retrain_gate"])
PROMOTION = AssetKey(["ml", "fraud_detector_promotion"])


@pytest.fixture(scope="module")
def estate(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    with built_estate(tmp_path_factory.mktemp("estate")) as settings:
        yield settings


def retrain_fraud(defs: Definitions, *also: AssetKey):
    with instance_for_test() as instance:
        return defs.resolve_job_def("retrain_models").execute_in_process(
            instance=instance, asset_selection=[GATE, FRAUD, *also], raise_on_error=False
        )


def materialize_alone(settings: Settings, dagster_home: Path) -> subprocess.CompletedProcess:
    """What a user types: ``dagster asset materialize`` of the training asset alone, no gate selected."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RECALL_", "MLFLOW_"))}
    env.update(RECALL_HOME=str(settings.home), DAGSTER_HOME=str(dagster_home))
    dagster = Path(sys.executable).with_name("dagster")
    return subprocess.run(
        [str(dagster), "asset", "materialize", "-m", "seed.dagster.definitions", "-a", "defs",
         "--select", FRAUD.to_user_string()],
        env=env, capture_output=True, text=True, timeout=600,
    )


def fraud_versions(settings: Settings) -> list[int]:
    client = MlflowClient(tracking_uri=settings.mlflow_uri, registry_uri=settings.mlflow_uri)
    return sorted(int(v.version) for v in client.search_model_versions("name = 'fraud_detector'"))


def test_broken_estate_refuses_the_retrain_and_heal_lets_it_run(estate: Settings, tmp_path: Path) -> None:
    defs = build_definitions(estate, with_recall=True)
    with instance_for_test() as instance:  # the nightly scan records the healthy schemas
        assert defs.resolve_job_def("recall_scan").execute_in_process(instance=instance).success
    lifecycle.break_estate(estate, Progress(quiet=True))

    refused = retrain_fraud(defs)
    line, why = withheld(refused, GATE)
    assert not refused.get_asset_materialization_events(), "the gate withheld itself and the retrain never ran"
    checks = {c.asset_check_key.name: c for c in refused.get_asset_check_evaluations()}
    assert line.startswith("NO-GO: active_incidents: ") and line.endswith(", risk_tier") and why["verdict"] == "NO-GO"
    assert {"risk_tier", "failing_assertions", "training_serving_skew"} <= set(why["failing_checks"].split(", "))
    assert "| CRITICAL | training_serving_skew |" in why["critical_findings"], why["critical_findings"]
    assert "| failing_assertions | FAIL |" in why["checks"]
    assert "| measured_impact | PASS | 2 finding(s) replayed on the model, none blocks |" in why["checks"], (
        "the gate replays the injuries on the served version")
    assert "| schema_drift | PASS |" in why["checks"], (
        "the occurred_at retype is one finding, at raw.transactions, and its replay on the model lowers it")
    measured = checks["measured_impact"]
    assert measured.passed == (measured.metadata["status"].value != "FAIL")

    versions = fraud_versions(estate)
    alone = materialize_alone(estate, tmp_path)
    assert alone.returncode != 0, alone.stdout[-2000:]
    assert "Recall's retrain gate refuses to retrain fraud_detector: NO-GO: " in alone.stderr
    assert "training_serving_skew" in alone.stderr.split("refuses to retrain fraud_detector")[1].split("\n")[0]
    assert "Materialized value ml fraud_detector" not in alone.stderr
    assert fraud_versions(estate) == versions, "the refused retrain registered no version"

    lifecycle.heal(estate, Progress(quiet=True))
    healed = retrain_fraud(defs)
    assert healed.success
    gate = next(c for c in healed.get_asset_check_evaluations() if c.asset_check_key.name == "retrain_gate")
    assert gate.passed and gate.metadata["verdict"].value == "GO"
    assert [e.asset_key for e in healed.get_asset_materialization_events()] == [GATE, FRAUD]

    versions = fraud_versions(estate)
    alone = materialize_alone(estate, tmp_path)
    assert alone.returncode == 0, alone.stderr[-3000:]
    assert "Recall's gate: GO for fraud_detector (asked by the training step: the gate was not part of" in alone.stderr
    assert fraud_versions(estate) == [*versions, versions[-1] + 1], "the healed estate's retrain registers one"


def test_a_candidate_trained_on_regressed_code_is_never_promoted(estate: Settings) -> None:
    client = MlflowClient(tracking_uri=estate.mlflow_uri, registry_uri=estate.mlflow_uri)
    production = client.get_registered_model("fraud_detector").aliases["production"]
    injuries.change_feature_code(estate)
    try:
        result = retrain_fraud(build_definitions(estate), PROMOTION)
    finally:
        injuries.restore_feature_code(estate)
    assert not result.success
    metric = next(c for c in result.get_asset_check_evaluations() if c.asset_check_key.name == "metric_gate")
    assert not metric.passed and metric.metadata["verdict"].value in ("REGRESSION", "INCONCLUSIVE")
    assert metric.metadata["hypotheses"].value.startswith("| hypothesis | score | evidence |")
    assert "feature_transformation" in metric.metadata["hypotheses"].value
    assert [e.asset_key for e in result.get_asset_materialization_events()] == [GATE, FRAUD], "trained, not promoted"
    assert client.get_registered_model("fraud_detector").aliases["production"] == production
