"""Slack and GitHub notifications against a local HTTP server: once per incident, once per resolution."""

from __future__ import annotations

import json
from contextlib import closing
from pathlib import Path

import pytest
from datahub.metadata.schema_classes import IncidentInfoClass
from wb_support import BREAK, HEAL_DATA, HEAL_TRAINING, HEALTHY, lite_estate, scan

from tests.conftest import Inbox

from recall_dagster.graph import LiteGraph
from recall_dagster.writeback.config import GithubConfig, Notify, SlackConfig, WritebackConfig
from recall_dagster.writeback.notify import Github, Slack
from recall_dagster.writeback.report import WritebackReport
from recall_dagster.writeback.run import write_back


def _issues_at(url: str, enabled: bool = True) -> GithubConfig:
    return GithubConfig(enabled=enabled, repo="acme/models", token_env="TEST_GH_TOKEN", api_url=url)


@pytest.fixture
def notifying(wb_config: WritebackConfig, inbox: Inbox) -> WritebackConfig:
    slack = SlackConfig(enabled=True, webhook_url_env="TEST_SLACK_URL")
    return wb_config.model_copy(update={"notify": Notify(slack=slack, github=_issues_at(inbox.url))})


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
    slack_only = notifying.model_copy(update={"notify": notifying.notify.model_copy(
        update={"github": _issues_at(inbox.url, enabled=False)})})
    report = _write(lite_path, recall_config, settings, slack_only, 2_000)
    assert report.notes == ("Slack notifications are on but TEST_SLACK_URL is not set",)


def test_a_password_or_token_from_the_graph_is_masked_in_every_message(inbox: Inbox) -> None:
    pasted = "the test reads postgresql://svc:hunter2-pw@db/x with ghp-pasted-token"
    Slack(f"{inbox.url}/slack").announce("a table", pasted)
    Github(_issues_at(inbox.url), "gh-token").announce(
        f"title {pasted}", f"gh-token and {pasted}")
    sent = repr(inbox.take())
    assert "hunter2-pw" not in sent and "gh-token" not in sent and "[redacted]@db" in sent


def test_a_github_issue_title_from_the_graph_is_one_line_of_text(inbox: Inbox) -> None:
    github = Github(_issues_at(inbox.url), "gh-token")
    github.announce("orders\x1b[31m\nfailing\u202e", "body\x1b[2J")
    [(_, _, issue)] = inbox.take()
    assert issue["title"] == "[Recall] orders\\x1b[31m failing\\u202e" and issue["body"] == "body\\x1b[2J"


# An OSC 8 hyperlink ("click" pointing elsewhere), a screen clear and a right-to-left override; shown written out.
CONTROLS = "\x1b]8;;http://evil\x1b\\click\x1b]8;;\x1b\\\x1b[2J\u202e"
CONTROLS_SHOWN = "\\x1b]8;;http://evil\\x1b\\click\\x1b]8;;\\x1b\\\\x1b[2J\\u202e"


def test_escape_sequences_in_a_table_name_reach_incident_titles_and_messages_written_out(
    tmp_path, recall_config, settings, notifying, inbox
) -> None:
    """DataHub lists an incident by its title, and Slack and GitHub head their messages with it: each shows
    the escapes the table's name holds, and no title, message or issue carries an ESC or the override."""
    fixtures = []
    for fixture in (HEALTHY, BREAK):
        hostile = tmp_path / Path(fixture).name
        hostile.write_text(Path(fixture).read_text().replace("user_stats", "user_stats" + json.dumps(CONTROLS)[1:-1]))
        fixtures.append(str(hostile))
    _write(lite_estate(Path(settings.graph), *fixtures), recall_config, settings, notifying, 1_000)
    with closing(LiteGraph(settings.graph)) as graph:
        incidents = graph.get_aspects(graph.list_urns("incident"), [IncidentInfoClass]).values()
    titles = [aspects[IncidentInfoClass.ASPECT_NAME].title for aspects in incidents]
    sent = inbox.take()
    headlines = [body["text"].split("\n")[0] for _, path, body in sent if path == "/slack"]
    issues = [body for _, path, body in sent if path.endswith("/issues")]
    assert len(titles) == len(headlines) == len(issues) == 2
    assert all(f"user_stats{CONTROLS_SHOWN}" in said for said in (*titles, *headlines, *(i["title"] for i in issues)))
    said = "".join([*titles, *(v for _, _, body in sent for v in body.values() if isinstance(v, str))])
    assert "\x1b" not in said and "\u202e" not in said
