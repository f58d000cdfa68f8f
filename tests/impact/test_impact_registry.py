"""MLflow failing as a service (exit 3) told apart from MLflow answering "no such thing", through MLflow's own
client against servers that answer the ways real ones do when they break."""

from __future__ import annotations

import json
import os
import socket
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator

import pytest
from sqlalchemy.engine import make_url

from recall_dagster.diagnose.collect import pick_versions
from recall_dagster.errors import EXIT_UNREACHABLE, ConfigError, ModelNotFound, ServiceUnreachable
from tests.configured import with_section
from recall_dagster.mlflow_registry import RegistryLimits, failing, mlflow_client, sqlite_store
from recall_dagster.config.load import load_yaml_config
from tests.cutting import free_port

LIMITS = RegistryLimits(timeout_seconds=1, retries=0)
MLFLOW_LIMITS = ("MLFLOW_HTTP_REQUEST_TIMEOUT", "MLFLOW_HTTP_REQUEST_MAX_RETRIES")


@pytest.fixture(autouse=True)
def no_team_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts without MLflow limits in the environment, and leaves none behind."""
    for name in MLFLOW_LIMITS:
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)


@contextmanager
def answering(status: int, body: str, content_type: str = "application/json") -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body.encode())))
            self.end_headers()
            self.wfile.write(body.encode())

        do_GET = do_POST = _answer

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def silent() -> Iterator[str]:
    """A server that takes the connection and never answers."""
    listener = socket.create_server(("127.0.0.1", 0))
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        listener.close()


def listing(url: str) -> Exception:
    with pytest.raises((ServiceUnreachable, ModelNotFound)) as raised:
        pick_versions(mlflow_client(url, LIMITS), "fraud_detector", None, None, ["production"])
    return raised.value


@pytest.mark.parametrize(
    "status, body, content_type",
    [
        (503, "Service Unavailable", "text/plain"),
        (500, json.dumps({"error_code": "INTERNAL_ERROR", "message": "database is gone"}), "application/json"),
        (200, "<html>a login page</html>", "text/html"),
        (429, json.dumps({"error_code": "REQUEST_LIMIT_EXCEEDED", "message": "slow down"}), "application/json"),
    ],
)
def test_a_registry_that_fails_as_a_service_is_exit_3_naming_server_and_task(status, body, content_type) -> None:
    with answering(status, body, content_type) as url:
        err = listing(url)
    assert isinstance(err, ServiceUnreachable) and err.exit_code == EXIT_UNREACHABLE
    assert str(err).startswith(f"MLflow at {url} did not answer while listing the versions of fraud_detector: ")


def test_a_registry_nobody_answers_is_exit_3() -> None:
    assert isinstance(listing(f"http://127.0.0.1:{free_port()}"), ServiceUnreachable)


def test_a_registry_that_takes_the_call_and_never_answers_gives_up_at_the_timeout() -> None:
    with silent() as url:
        err = listing(url)
    assert isinstance(err, ServiceUnreachable) and "timeout" in str(err).lower()


def test_a_registry_that_answers_no_such_model_is_not_a_failing_service() -> None:
    missing = json.dumps({"error_code": "RESOURCE_DOES_NOT_EXIST", "message": "Registered Model not found"})
    with answering(404, missing) as url:
        err = listing(url)
    assert isinstance(err, ModelNotFound) and "MLflow has no registered model 'fraud_detector'" in str(err)


def test_a_missing_local_artifact_is_an_answer_not_a_failing_service(tmp_path: Path) -> None:
    from mlflow.exceptions import MlflowException

    client = mlflow_client(f"sqlite:///{tmp_path / 'mlflow.db'}", LIMITS)
    experiment = client.create_experiment("e", artifact_location=(tmp_path / "artifacts").as_uri())
    run = client.create_run(experiment)
    (tmp_path / "into").mkdir()
    with pytest.raises(MlflowException) as raised:
        client.download_artifacts(run.info.run_id, "evaluation/holdout.parquet", str(tmp_path / "into"))
    assert not failing(raised.value)


def test_the_limits_are_defaults_a_team_setting_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    mlflow_client("http://127.0.0.1:9", RegistryLimits(timeout_seconds=7, retries=3))
    assert [os.environ[n] for n in MLFLOW_LIMITS] == ["7", "3"]
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "5")
    mlflow_client("http://127.0.0.1:9", RegistryLimits(timeout_seconds=7, retries=1))
    assert os.environ["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] == "5"


@pytest.mark.parametrize(
    "registry, message",
    [
        ({"retries": 10}, "`impact.registry.retries` must be an integer in \\[0, 9\\], not 10"),
        ({"timeout_seconds": 0}, "impact.registry.timeout_seconds"),
        ({"retries": -1}, "impact.registry.retries"),
    ],
)
def test_registry_limits_out_of_range_name_the_key(registry: dict, message: str) -> None:
    data, _ = load_yaml_config(None)
    impact = {**data["impact"], "registry": {**data["impact"]["registry"], **registry}}
    with pytest.raises(ConfigError, match=message):
        with_section("impact", impact)


@pytest.mark.parametrize("uri", ["sqlite:///mlflow.db", "sqlite:////tmp/a b/m.db", "sqlite:////tmp/x%20y.db",
                                 "sqlite://", "sqlite:///:memory:", "sqlite:///rel/dir/m.db?mode=ro"])
def test_the_sqlite_store_is_the_file_sqlalchemy_would_open(uri: str) -> None:
    database = make_url(uri).database
    expected = Path(database) if database and database != ":memory:" else None
    assert sqlite_store(uri) == expected
    assert sqlite_store("postgresql://host/mlflow") is None


@pytest.mark.parametrize("name", ["plain", "o'brien", 'the "best" model', "o'brien's \"best\""])
def test_a_registered_model_s_versions_are_found_whatever_quotes_its_name_holds(tmp_path: Path, name: str) -> None:
    """MLflow's filter escapes neither quote: a name with a single quote found no versions when its quote was
    backslashed (the gate, rollback and diagnose ask this)."""
    from mlflow import MlflowClient

    from recall_dagster.mlflow_registry import version_numbers

    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    for other in (name, name + " shadow"):
        client.create_registered_model(other)
        client.create_model_version(other, str(tmp_path / "model"))
    client.create_model_version(name, str(tmp_path / "model"))
    assert version_numbers(client, name) == {1, 2}
