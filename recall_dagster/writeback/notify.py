"""Notifications, opt-in: a Slack message and a GitHub issue per incident, each sent once.

What each channel last announced for each incident is kept in the store, so a
repeat scan sends nothing, a resolution is announced once, and an incident that
returns is announced again.  A channel only hears of a state the graph really
holds (the incident's write landed or was already true): the graph stays the
record and the channels follow it.  A failed send is reported and tried again
on the next scan; it never fails the write-back.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any, Iterable, Literal, Protocol

import requests
from datahub.metadata.schema_classes import IncidentInfoClass, IncidentStateClass

from recall_dagster.secrets import redact
from recall_dagster.shown import shown
from recall_dagster.writeback.config import GithubConfig, SlackConfig, WritebackConfig
from recall_dagster.writeback.writes import Write

Event = Literal["opened", "resolved", "reopened"]
Record = dict[str, Any]  # what a channel remembers of one incident: at least the "state" it announced
_TIMEOUT_SECONDS = 10
_HEADLINE = {event: f"Recall incident {event}" for event in ("opened", "resolved", "reopened")}


@dataclass(frozen=True)
class Notice:
    channel: str
    incident: str
    event: Event
    error: str | None = None  # None when sent


class Channel(Protocol):
    name: str
    secret: str  # what must never appear in a notice: the webhook URL, the token

    def send(self, event: Event, urn: str, info: IncidentInfoClass, record: Record) -> Record:
        """Announce ``event``; return what to remember.  Raises on failure."""

    def announce(self, title: str, text: str) -> Record:
        """Say something that is not an incident (a regression diagnosis); raises on failure."""


def _checked(response: requests.Response) -> requests.Response:
    if response.status_code >= 400:
        raise RuntimeError(f"HTTP {response.status_code}: {response.text[:200]}")
    return response


def slack_text(value: str | None) -> str:
    """Text from the graph as Slack shows it, never as Slack acts on it: each line :func:`shown` (no escape
    sequence, bidi override or secret), and ``<!channel>``, ``<@U123>`` and ``<http://evil|click>``, Slack's
    control sequences, inert: ``&``, ``<`` and ``>`` are escaped as Slack asks."""
    return shown(value or "", lines=True).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def github_text(value: str | None) -> str:
    """Text from the graph as GitHub shows it, never as it acts on it: each line :func:`shown`, no ``@team``
    ping, no HTML, no Markdown link to click (the brackets escaped)."""
    text = shown(value or "", lines=True).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _unmentioned(text).replace("[", "\\[").replace("]", "\\]")


def _unmentioned(text: str) -> str:
    """No ``@name`` in ``text`` pings anyone: a zero-width space after the ``@``, put there after :func:`shown`,
    which would write it out."""
    return re.sub(r"@(?=[\w-])", "@\u200b", text)


class Slack:
    name = "slack"

    def __init__(self, webhook_url: str) -> None:
        self.url = self.secret = webhook_url

    def send(self, event: Event, urn: str, info: IncidentInfoClass, record: Record) -> Record:
        text = f"*{_HEADLINE[event]}*: {slack_text(info.title)}\n{slack_text(info.status.message)}"
        if event != "resolved":
            text += f"\n{slack_text(info.description)}"
        self._post(text)
        return {"state": info.status.state}

    def announce(self, title: str, text: str) -> Record:
        self._post(f"*{slack_text(title)}*\n{slack_text(text)}")
        return {}

    def _post(self, text: str) -> None:
        payload: dict[str, Any] = {"text": redact(text, [self.secret]), "unfurl_links": False}
        _checked(requests.post(self.url, json=payload, timeout=_TIMEOUT_SECONDS))


class Github:
    name = "github"

    def __init__(self, config: GithubConfig, token: str) -> None:
        self.secret = token
        self.issues = f"{config.api_url}/repos/{config.repo}/issues"
        self.headers = {"Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json"}

    def _call(self, method: str, url: str, body: dict[str, Any]) -> dict[str, Any]:
        said = {k: redact(v, [self.secret]) if isinstance(v, str) else v for k, v in body.items()}
        response = requests.request(method, url, json=said, headers=self.headers, timeout=_TIMEOUT_SECONDS)
        return _checked(response).json()

    def send(self, event: Event, urn: str, info: IncidentInfoClass, record: Record) -> Record:
        if event == "opened":
            opened = self._open(info.title or urn, f"{github_text(info.description)}\n\nDataHub incident: `{urn}`")
            return {"state": info.status.state, **opened}
        issue_url = f"{self.issues}/{record['issue']}"
        comment = f"**{_HEADLINE[event]}**: {github_text(info.status.message)}"
        self._call("POST", f"{issue_url}/comments", {"body": comment})
        self._call("PATCH", issue_url, {"state": "closed" if event == "resolved" else "open"})
        return {**record, "state": info.status.state}


    def announce(self, title: str, text: str) -> Record:
        return self._open(title, _unmentioned(shown(text, lines=True)))  # Recall's own Markdown stays

    def _open(self, title: str, body: str) -> Record:
        """An issue titled ``title`` as one line of :func:`shown` text, ``body`` as the caller made it."""
        issue = self._call("POST", self.issues, {"title": f"[Recall] {shown(title)}", "body": body,
                                                 "labels": ["recall"]})
        return {"issue": issue["number"]}


def channels(config: WritebackConfig) -> tuple[list[Channel], list[str]]:
    """The configured channels whose secrets are set, and a note for each that is on but unusable."""
    found: list[Channel] = []
    notes = []
    slack: SlackConfig | None = config.slack
    if slack is not None:
        url = os.environ.get(slack.webhook_url_env)
        if url:
            found.append(Slack(url))
        else:
            notes.append(f"Slack notifications are on but {slack.webhook_url_env} is not set")
    github: GithubConfig | None = config.github
    if github is not None:
        token = os.environ.get(github.token_env)
        if token:
            found.append(Github(github, token))
        else:
            notes.append(f"GitHub notifications are on but {github.token_env} is not set")
    return found, notes


def _event(announced: str | None, state: str | IncidentStateClass) -> Event | None:
    """``state`` as DataHub types an enum field; its value is one of IncidentStateClass's str constants."""
    if announced == state:
        return None
    if state == IncidentStateClass.ACTIVE:
        return "opened" if announced is None else "reopened"
    # A resolution is announced only to a channel that heard of the incident.
    return "resolved" if announced == IncidentStateClass.ACTIVE else None


def notify(
    incidents: Iterable[Write], chans: list[Channel], notified: dict[str, Record]
) -> tuple[list[Notice], dict[str, Record]]:
    """Announce every change of incident state each channel has not heard of yet.

    ``incidents`` are incident writes whose state the graph now holds;
    ``notified`` is per incident, per channel, what was announced.  Returns the
    notices and the updated memory.
    """
    notices = []
    memory = {urn: dict(by_channel) for urn, by_channel in notified.items()}
    for write in incidents:
        info = write.mcp.aspect
        if not isinstance(info, IncidentInfoClass):
            continue
        for channel in chans:
            record = memory.get(write.urn, {}).get(channel.name, {})
            event = _event(record.get("state"), info.status.state)
            if event is None:
                continue
            try:
                updated = channel.send(event, write.urn, info, record)
            except (requests.RequestException, RuntimeError, KeyError, ValueError) as err:
                why = redact(f"{type(err).__name__}: {err}", [channel.secret])
                notices.append(Notice(channel.name, write.urn, event, why))
                continue
            memory.setdefault(write.urn, {})[channel.name] = updated
            notices.append(Notice(channel.name, write.urn, event))
    return notices, memory


def announce(chans: Iterable[Channel], subject: str, title: str, text: str) -> list[Notice]:
    """One message per channel about ``subject``; a failure is reported in its notice, never raised."""
    notices = []
    for channel in chans:
        try:
            channel.announce(title, text)
            notices.append(Notice(channel.name, subject, "opened"))
        except Exception as err:  # a channel that fails must not fail the caller
            why = redact(f"{type(err).__name__}: {err}", [channel.secret])
            notices.append(Notice(channel.name, subject, "opened", error=why))
    return notices
