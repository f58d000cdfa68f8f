"""Fixtures shared by every test folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

import pytest
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

if TYPE_CHECKING:
    from recall_dagster.settings import Settings

DATAHUB_CLI = Path(sys.executable).with_name("datahub")

# Tests do not time things: Hypothesis's 200 ms deadline per example, and its health check on slow data
# generation, fail a property on a loaded machine (CI runs two workers on two cores) though nothing about the
# property changed.
hypothesis_settings.register_profile("recall", deadline=None, suppress_health_check=[HealthCheck.too_slow])
hypothesis_settings.load_profile("recall")


@pytest.fixture(scope="session", autouse=True)
def _session_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The same for what a session builds once (the Recall definitions the Dagster tests share): set up before
    any test's own home, they would read the checkout's ``.recall/recall.yaml`` after ``make demo``."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RECALL_HOME", str(tmp_path_factory.mktemp("session-home")))
        yield


@pytest.fixture(autouse=True)
def _own_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test starts from an empty RECALL_HOME of its own, never the checkout's ``.recall``: ``make demo``
    leaves the demo's ``recall.yaml`` there, and tests reading the estate's settings would take it up. A test
    that needs a home of its own sets it over this one."""
    monkeypatch.setenv("RECALL_HOME", str(tmp_path_factory.mktemp("home")))


@pytest.fixture
def lite_cli(tmp_path: Path) -> Callable[[Path], Callable[..., str]]:
    """Run DataHub's own ``datahub lite`` CLI against a Lite file; returns its stdout.

    ``datahub lite get/ls`` have no --file flag: they read the ``lite`` block of
    ~/.datahubenv, which must also hold a ``gms`` block to validate, so each call
    runs with a HOME of its own.
    """

    def for_file(graph_file: Path) -> Callable[..., str]:
        home = tmp_path / "datahub-home"
        home.mkdir(exist_ok=True)
        (home / ".datahubenv").write_text(
            "gms:\n  server: http://127.0.0.1:9\n"
            f"lite:\n  type: sqlite\n  config:\n    file: {graph_file}\n"
        )
        env = {**os.environ, "HOME": str(home), "DATAHUB_TELEMETRY_ENABLED": "false"}

        def run(*args: str) -> str:
            done = subprocess.run(
                [str(DATAHUB_CLI), *args], env=env, capture_output=True, text=True, timeout=120, check=False
            )
            assert done.returncode == 0, done.stderr
            return done.stdout

        return run

    return for_file


@dataclass
class Inbox:
    """Slack's incoming webhook at /slack (and any path under it, where a real webhook keeps its secret) and
    GitHub's issues API under /repos, recording every call."""

    url: str = ""
    calls: list[tuple[str, str, Any]] = field(default_factory=list)  # (method, path, body)
    failing: int = 0  # the next n Slack posts answer 500
    issues: int = 0
    token: str = "gh-token"  # the GitHub token it accepts

    def answer(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        if path.startswith("/slack") and self.failing:
            self.failing -= 1
            return 500, {"error": "slack is down"}
        self.calls.append((method, path, body))
        if path == "/repos/acme/models/issues" and method == "POST":
            self.issues += 1
            return 201, {"number": self.issues}
        return 200, {"ok": True}

    def take(self) -> list[tuple[str, str, Any]]:
        calls, self.calls = self.calls, []
        return calls


@contextmanager
def serving(state: Inbox) -> Iterator[Inbox]:
    """``state`` answered by a real local HTTP server for as long as the block runs; its ``url`` is set."""

    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path.startswith("/repos") and self.headers.get("Authorization") != f"Bearer {state.token}":
                status, payload = 401, {"message": "Bad credentials"}
            else:
                status, payload = state.answer(self.command, self.path, json.loads(raw) if raw else None)
            body = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_POST = do_PATCH = _serve

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def inbox(monkeypatch: pytest.MonkeyPatch) -> Iterator[Inbox]:
    with serving(Inbox()) as state:
        monkeypatch.setenv("TEST_SLACK_URL", f"{state.url}/slack")
        monkeypatch.setenv("TEST_GH_TOKEN", state.token)
        yield state


def point_recall_at(settings: "Settings", monkeypatch: pytest.MonkeyPatch) -> "Settings":
    """Make ``recall`` commands run in this process use ``settings``' estate, and nothing from the caller's."""
    monkeypatch.setenv("RECALL_HOME", str(settings.home))
    monkeypatch.setenv("RECALL_GRAPH", settings.graph)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.delenv("RECALL_CONFIG", raising=False)
    return settings


@contextmanager
def built_estate(home: Path, scale: float = 0.05) -> Iterator["Settings"]:
    """The demo estate built by the real systems under ``home`` at a small scale, reset afterwards."""
    from recall_dagster.progress import Progress
    from recall_dagster.settings import Settings
    from seed import lifecycle

    settings = Settings.under(home)
    try:
        lifecycle.build(settings, Progress(quiet=True), scale=scale)
        yield settings
    finally:
        lifecycle.reset(settings, Progress(quiet=True))
