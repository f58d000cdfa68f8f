"""`dagster dev -w workspace.yaml` starts on the embedded stack and its GraphQL endpoint serves Recall."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from recall_dagster.cli import cli
from recall_dagster.cli.dagster_cmd import INSTANCE_YAML, dagster_home
from recall_dagster.settings import REPO_ROOT, Settings

SCRIPT = REPO_ROOT / "scripts" / "dagster_ui_check.py"


def test_dagster_home_lives_under_recall_home_and_keeps_a_teams_instance_file(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "recall", graph=str(tmp_path / "recall" / "datahub.db"))
    home = dagster_home(settings)
    assert home == settings.home / "dagster" and (home / "dagster.yaml").read_text() == INSTANCE_YAML
    (home / "dagster.yaml").write_text("run_launcher: {}\n")
    assert (dagster_home(settings) / "dagster.yaml").read_text() == "run_launcher: {}\n"


@pytest.mark.stack
@pytest.mark.slow
def test_graphql_lists_the_assets_checks_sensors_and_schedules(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--recall-home", str(tmp_path)], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:] + (tmp_path / "dagster-dev.log").read_text()[-3000:]
    served = json.loads(done.stdout)
    assets = served["assets"]
    assert {"model_closures", "risk_findings", "impact_tests", "risk_scores", "datahub_writeback",
            "datahub_metadata"} <= set(assets)
    for model in ("fraud_detector", "churn_predictor", "demand_forecaster"):
        assert assets[f"ml/{model}_retrain_gate"] == {"retrain_gate": False, "measured_impact": False}, (
            "the gate refuses by withholding itself, not by failing the run"
        )
        assert f"ml/{model}" in assets
    assert assets["marts/fct_transactions"]["not_null_fct_transactions_unit_price"] is False
    assert assets["risk_scores"] == {"no_model_at_fail_tier": False}
    assert served["sensors"] == {
        "recall": {"datahub_assertion_results": "RUNNING", "mlflow_new_versions": "RUNNING"},
        "demo_estate": {"datahub_sensor": "RUNNING"},  # DataHub's Dagster plugin, as the team would run it
    }
    assert served["schedules"] == {"recall": {"nightly_scan": "0 2 * * *"}, "demo_estate": {"daily_dbt_build": "0 5 * * *"}}
    assert (tmp_path / "dagster" / "dagster.yaml").exists(), "DAGSTER_HOME is under RECALL_HOME"


def test_a_taken_port_is_a_clear_usage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECALL_HOME", str(tmp_path))
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        result = CliRunner().invoke(cli, ["dagster", "--port", str(port)])
    assert result.exit_code == 2
    assert f"port {port} on 127.0.0.1 is already in use" in result.output and "Traceback" not in result.output
