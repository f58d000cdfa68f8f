"""The demo's MLflow: a tracking server on localhost over a SQLite store under RECALL_HOME, as teams run MLflow.

Training, promotions and DataHub's mlflow source reach MLflow over HTTP, through ``mlflow server``; the store
it serves (``RECALL_HOME/mlflow/mlflow.db``, artifacts beside it) is what Recall's own commands read
(:attr:`Settings.mlflow_uri`), so they need no server running. Like the embedded warehouse, the server
outlives the process that started it (dbt, Dagster runs and the CLI all share it), its address is kept under
RECALL_HOME, and it is stopped only on request (``seed reset``). When ``MLFLOW_TRACKING_URI`` is set the
team's MLflow is used as given and no server is started or stopped.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil

from recall_dagster.errors import StackError
from recall_dagster.files import locked
from recall_dagster.settings import Settings

SERVER_LOCK_WAIT_SECONDS = 60  # held only while a server is looked up or spawned, never while it starts
START_SECONDS = 120  # a first start migrates a new store: MLflow's own schema, table by table
STOP_SECONDS = 30


def store_uri(settings: Settings) -> str:
    """The store the server keeps its runs and registry in: the one Recall's commands read."""
    return Settings.under(settings.home).mlflow_uri


def ensure_tracking_server(settings: Settings, wait: bool = True) -> str:
    """The tracking URI training and ingestion use: the team's MLflow as given, else the estate's own server,
    started if it is not running. Without ``wait`` a server just started may not answer yet: a first start
    migrates a new store for some seconds, which the demo spends loading the warehouse instead."""
    if settings.mlflow_tracking_uri:
        return settings.mlflow_tracking_uri
    settings.mlflow_dir.mkdir(parents=True, exist_ok=True)
    with _lock(settings):
        held = _read(settings)
        process = _process(held)
        if process is None:
            held, process = _start(settings)
    if wait:
        _wait(settings, held, process)
    return str(held["url"])


def stop_tracking_server(settings: Settings) -> bool:
    """Stop the estate's own server; True if one was running. A team's MLflow is never stopped."""
    if settings.mlflow_tracking_uri or not _record(settings).exists():
        return False
    with _lock(settings):
        held = _read(settings)
        _record(settings).unlink(missing_ok=True)
        process = _process(held)
        if process is None:
            return False
        try:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(STOP_SECONDS)
        except (ProcessLookupError, psutil.NoSuchProcess):
            pass
        except psutil.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
    return True


def _record(settings: Settings) -> Path:
    return settings.mlflow_dir / "server.json"


def _log(settings: Settings) -> Path:
    return settings.home / "logs" / "mlflow-server.log"


def _lock(settings: Settings):
    return locked(settings.home / ".mlflow.lock", "the MLflow tracking server", SERVER_LOCK_WAIT_SECONDS)


def _read(settings: Settings) -> dict:
    try:
        held = json.loads(_record(settings).read_text(encoding="utf-8"))
        return held if isinstance(held, dict) else {}
    except (OSError, ValueError):
        return {}


def _process(held: dict) -> psutil.Process | None:
    """The server's process, if it is still the one the record names (a pid can be reused)."""
    try:
        process = psutil.Process(int(held["pid"]))
        if process.create_time() != held["created"] or process.status() == psutil.STATUS_ZOMBIE:
            return None
        return process
    except (KeyError, TypeError, ValueError, psutil.Error):
        return None


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=2) as answer:
            return answer.status == 200
    except (OSError, ValueError):
        return False


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _start(settings: Settings) -> tuple[dict, psutil.Process]:
    """``mlflow server`` (one worker) over the estate's store, recorded under RECALL_HOME; clients write
    artifacts straight into the folder beside the store (no proxy: Recall reads them there without a server)."""
    port = _free_port()
    artifacts = (settings.mlflow_dir / "artifacts").resolve()
    log = _log(settings)
    log.parent.mkdir(parents=True, exist_ok=True)
    command = [
        str(Path(sys.executable).with_name("mlflow")), "server",
        "--backend-store-uri", store_uri(settings), "--default-artifact-root", artifacts.as_uri(),
        "--no-serve-artifacts", "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}  # the store is the one named here
    # MLflow 3's server also starts a job runner and its consumers (GenAI scorers, trace archival): eight more
    # processes the demo has no work for, which would share its two cores while it trains.
    env["MLFLOW_SERVER_ENABLE_JOB_EXECUTION"] = "false"
    with log.open("ab") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, cwd=settings.mlflow_dir, env=env)
    process = psutil.Process(proc.pid)
    held = {"pid": proc.pid, "created": process.create_time(), "url": f"http://127.0.0.1:{port}"}
    _record(settings).write_text(json.dumps(held), encoding="utf-8")
    return held, process


def _wait(settings: Settings, held: dict, process: psutil.Process) -> None:
    """Until the server answers; one that died or does not answer in time is an error showing its log."""
    deadline = time.monotonic() + START_SECONDS
    while not _answers(str(held["url"])):
        try:
            alive = process.is_running() and process.status() != psutil.STATUS_ZOMBIE
        except psutil.Error:
            alive = False
        if not alive or time.monotonic() > deadline:
            log = _log(settings)
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:]) if log.exists() else "(no log)"
            state = "exited" if not alive else f"did not answer within {START_SECONDS} s"
            raise StackError(f"the MLflow tracking server over {store_uri(settings)} {state}; `python -m seed "
                             f"reset` stops what is left of it. Its log is {log}:\n{tail}")
        time.sleep(0.2)
