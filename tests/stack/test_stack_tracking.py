"""The demo's MLflow tracking server starts once per home, is shared, stops on request; a team's MLflow is never
managed. What reaches it over HTTP lands in the SQLite store and the artifact folder Recall reads without it."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import psutil
import pytest
from mlflow import MlflowClient
from stack_homes import fresh_settings

from recall_dagster.errors import StackError
from recall_dagster.settings import Settings
from seed.stack import tracking
from seed.stack.tracking import ensure_tracking_server, stop_tracking_server

pytestmark = pytest.mark.stack


def _pid(settings: Settings) -> int:
    return json.loads((settings.mlflow_dir / "server.json").read_text())["pid"]


@pytest.mark.slow  # starts real processes for seconds each: `make test-slow`
def test_a_home_starts_one_server_that_writes_the_store_recall_reads_and_stops_on_request() -> None:
    settings = fresh_settings("recall-mlflow-")
    try:
        url = ensure_tracking_server(settings)
        assert url.startswith("http://127.0.0.1:")
        assert ensure_tracking_server(settings, wait=False) == url, "a running server is reused"
        served = MlflowClient(tracking_uri=url, registry_uri=url)
        experiment = served.create_experiment("churn")
        run = served.create_run(experiment)
        served.log_text(run.info.run_id, "rows", "evaluation/holdout.txt")
        served.create_registered_model("churn_model")
        served.create_model_version("churn_model", f"{run.info.artifact_uri}/model", run_id=run.info.run_id)
        served.set_registered_model_alias("churn_model", "production", "1")

        stored = MlflowClient(tracking_uri=settings.mlflow_uri, registry_uri=settings.mlflow_uri)
        assert stored.get_model_version_by_alias("churn_model", "production").run_id == run.info.run_id
        artifact = Path(stored.get_run(run.info.run_id).info.artifact_uri.removeprefix("file://"))
        assert artifact.is_relative_to(settings.mlflow_dir / "artifacts"), "artifacts lie beside the store"
        assert (artifact / "evaluation" / "holdout.txt").read_text() == "rows"

        first = _pid(settings)
        assert stop_tracking_server(settings) is True
        assert not psutil.pid_exists(first) or psutil.Process(first).status() == psutil.STATUS_ZOMBIE
        assert stop_tracking_server(settings) is False, "stopping a stopped server is a no-op"
        assert stored.get_run(run.info.run_id).info.run_id == run.info.run_id, "the store needs no server"
    finally:
        stop_tracking_server(settings)
        shutil.rmtree(settings.home, ignore_errors=True)


def test_a_team_tracking_uri_is_used_as_given_and_never_started_or_stopped(tmp_path: Path) -> None:
    settings = replace(fresh_settings("recall-mlflow-"), mlflow_tracking_uri="http://mlflow.shop.example:5000")
    try:
        assert ensure_tracking_server(settings) == "http://mlflow.shop.example:5000"
        assert not (settings.mlflow_dir / "server.json").exists()
        assert stop_tracking_server(settings) is False
    finally:
        shutil.rmtree(settings.home, ignore_errors=True)


@pytest.mark.slow  # starts real processes for seconds each: `make test-slow`
def test_a_server_that_cannot_start_says_so_with_its_log(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = fresh_settings("recall-mlflow-")
    try:
        settings.mlflow_dir.mkdir(parents=True)
        (settings.mlflow_dir / "mlflow.db").write_text("not a database")
        monkeypatch.setattr(tracking, "START_SECONDS", 60)
        with pytest.raises(StackError, match="tracking server .* exited.*mlflow-server.log"):
            ensure_tracking_server(settings)
    finally:
        stop_tracking_server(settings)
        shutil.rmtree(settings.home, ignore_errors=True)
