"""Slack and GitHub notifications against a local HTTP server: once per incident, once per resolution."""

from __future__ import annotations

import json
import threading
from contextlib import closing
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator

import pytest
from wb_support import BREAK, HEAL_DATA, HEAL_TRAINING, lite_estate, scan

from recall_dagster.graph import LiteGraph
from recall_dagster.writeback import WritebackConfig, WritebackReport, write_back
from recall_dagster.writeback.config import GithubConfig, SlackConfig


@dataclass
class Inbox:
    """Slack's incoming webhook at /slack and GitHub's issues API under /repos, recording every call."""

    url: str = ""
    calls: list[tuple[str, str, Any]] = field(default_factory=list)  # (method, path, body)
    failing: int = 0  # the next n Slack posts answer 500
    issues: int = 0

    def answer(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        if path == "/slack" and self.failing:
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


@pytest.fixture
def inbox(monkeypatch: pytest.MonkeyPatch) -> Iterator[Inbox]:
    state = Inbox()

    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path.startswith("/repos") and self.headers.get("Authorization") != "Bearer gh-token":
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
    monkeypatch.setenv("TEST_SLACK_URL", f"{state.url}/slack")
    monkeypatch.setenv("TEST_GH_TOKEN", "gh-token")
    yield state
    server.shutdown()
    server.server_close()


@pytest.fixture
def notifying(wb_config: WritebackConfig, inbox: Inbox) -> WritebackConfig:
    return replace(
        wb_config,
        slack=SlackConfig(webhook_url_env="TEST_SLACK_URL"),
        github=GithubConfig(repo="acme/models", token_env="TEST_GH_TOKEN", api_url=inbox.url),
    )


def _write(lite_path, recall_config, settings, config, now_ms: int) -> WritebackReport:
    with closing(LiteGraph(lite_path)) as graph:
        report = write_back(graph, scan(graph, recall_config), settings, config, now_ms)
    assert report.ok
    return report


def _slack(calls) -> list[str]:
    return [body["text"].split(":")[0] for method, path, body in calls if path == "/slack"]


def _github(calls) -> list[tuple[str, str]]:
    return [(method, path) for method, path, _ in calls if path.startswith("/repos")]


def test_one_message_per_incident_one_resolution_nothing_repeated(
    lite_path, recall_config, settings, notifying, inbox
) -> None:
    report = _write(lite_path, recall_config, settings, notifying, 1_000)
    opened = inbox.take()
    assert _slack(opened) == ["*Recall incident opened*"] * 2
    assert _github(opened) == [("POST", "/repos/acme/models/issues")] * 2
    assert {n.event for n in report.notices} == {"opened"} and all(n.error is None for n in report.notices)
    issue = next(body for _, path, body in opened if path.endswith("/issues"))
    assert issue["title"].startswith("[Recall] ") and "urn:li:incident:" in issue["body"]

    _write(lite_path, recall_config, settings, notifying, 2_000)
    assert inbox.take() == []  # a repeat scan announces nothing

    lite_estate(lite_path, HEAL_TRAINING, HEAL_DATA)
    _write(lite_path, recall_config, settings, notifying, 3_000)
    resolved = inbox.take()
    assert _slack(resolved) == ["*Recall incident resolved*"] * 2
    assert sorted(_github(resolved)) == sorted(
        [("POST", f"/repos/acme/models/issues/{n}/comments") for n in (1, 2)]
        + [("PATCH", f"/repos/acme/models/issues/{n}") for n in (1, 2)]
    )
    assert {body["state"] for method, _, body in resolved if method == "PATCH"} == {"closed"}

    _write(lite_path, recall_config, settings, notifying, 4_000)
    assert inbox.take() == []

    lite_estate(lite_path, BREAK)
    _write(lite_path, recall_config, settings, notifying, 5_000)
    reopened = inbox.take()
    assert _slack(reopened) == ["*Recall incident reopened*"]  # only the training skew comes back
    assert [body["state"] for method, _, body in reopened if method == "PATCH"] == ["open"]


def test_a_failed_send_is_reported_and_sent_on_the_next_scan(
    lite_path, recall_config, settings, notifying, inbox
) -> None:
    inbox.failing = 2
    first = _write(lite_path, recall_config, settings, notifying, 1_000)
    assert [n.error is not None for n in first.notices if n.channel == "slack"] == [True, True]
    assert _slack(inbox.take()) == []

    second = _write(lite_path, recall_config, settings, notifying, 2_000)
    assert [n.event for n in second.notices] == ["opened", "opened"]
    assert _slack(inbox.take()) == ["*Recall incident opened*"] * 2


def test_notifications_are_off_unless_configured(
    lite_path, recall_config, settings, wb_config, notifying, inbox, monkeypatch
) -> None:
    assert wb_config.slack is None and wb_config.github is None  # the shipped recall.yaml
    _write(lite_path, recall_config, settings, wb_config, 1_000)
    assert inbox.take() == []

    monkeypatch.delenv("TEST_SLACK_URL")
    report = _write(lite_path, recall_config, settings, replace(notifying, github=None), 2_000)
    assert report.notes == ("Slack notifications are on but TEST_SLACK_URL is not set",)
