"""Where the demo's Feast runs, and how work reaches it.

Feast (0.47 to 0.67 alike) holds pandas below 3, which the demo's training stack has moved past, so Feast runs
in the environment DataHub's sources run in: its feast source brings Feast, and ``make install`` makes it beside
the demo's own (``.venv/ingest/acryl-datahub-<version>``, :mod:`recall_dagster.ingest_env`). Everything the
feature store does with Feast (apply, materialise, read online, point-in-time joins) is one job for
:mod:`ml_models.feast_worker`, a process running there: data crosses as the parquet files Feast reads anyway, the
job and its answer as one line of JSON each. What the checkout computes (the exports, the entity rows, the
comparisons) stays here.

One worker serves every job of a process: importing Feast takes seconds, and a demo or a test session asks
dozens of times. It is started on the first job, started again if it died, and ends when this process does.
"""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import threading
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import IO, Any

from recall_dagster import ingest_env
from recall_dagster.errors import StackError

WORKER = Path(__file__).with_name("feast_worker.py")


def feast_environment() -> ingest_env.IngestEnv:
    """The ingestion environment beside the one this runs in, at the acryl-datahub Recall reads with."""
    return ingest_env.IngestEnv(Path(sys.prefix) / "ingest", version(ingest_env.DISTRIBUTION))


@dataclass
class _Worker:
    process: subprocess.Popen[str]
    pid: int  # the process that started it: a forked child starts its own


_LOCK = threading.Lock()
_WORKERS: dict[Path, _Worker] = {}


def _relay(stream: IO[str]) -> None:
    """Feast's chatter to this process's stderr, where the demo keeps libraries' output (looked up per line, so
    a redirection in force when it is written takes it)."""
    for line in stream:
        sys.stderr.write(line)


def _started(env: ingest_env.IngestEnv) -> _Worker:
    worker = _WORKERS.get(env.path)
    if worker is not None and worker.pid == os.getpid() and worker.process.poll() is None:
        return worker
    if "feast" not in env.installed()[0] or not env.python.exists():
        ingest_env.prepare(env, ["feast"], [], lambda line: print(f"feast: {line}", file=sys.stderr))
    process = subprocess.Popen([str(env.python), str(WORKER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, encoding="utf-8", bufsize=1)
    threading.Thread(target=_relay, args=(process.stderr,), name="feast-stderr", daemon=True).start()
    worker = _WORKERS[env.path] = _Worker(process, os.getpid())
    return worker


def run_feast(job: dict[str, Any]) -> dict[str, Any]:
    """Run one job in Feast's environment (made, or given Feast, first if it has none); its answer."""
    env = feast_environment()
    with _LOCK:
        worker = _started(env)
        stdin, stdout = worker.process.stdin, worker.process.stdout
        assert stdin is not None and stdout is not None
        try:
            stdin.write(json.dumps(job) + "\n")
            stdin.flush()
            line = stdout.readline()
        except OSError:
            line = ""
        if not line:
            code = worker.process.wait()
            raise StackError(f"Feast's worker (in {env.path}) exited with {code} on the repository {job['repo']}; "
                             "its output is above")
    reply = json.loads(line)
    if "error" in reply:
        raise StackError(f"Feast (in {env.path}) failed on the repository {job['repo']}:\n{reply['error']}")
    return reply["answer"]


@atexit.register
def _stop() -> None:
    """End each worker this process started: it stops when its input closes."""
    for worker in _WORKERS.values():
        if worker.pid != os.getpid() or worker.process.stdin is None:
            continue
        worker.process.stdin.close()
        try:
            worker.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            worker.process.kill()
