"""The ``writeback:`` section of ``recall.yaml``: tags per tier, retries, notifications.

Kept apart from the scan's config because the scan never writes: it is read
only by the commands and assets that do.  Notifications are opt-in; secrets
(the Slack webhook URL, the GitHub token) are named by environment variable,
never written in the file.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

from recall_dagster.detect import Severity
from recall_dagster.detect.config import ScoringConfig, _Section
from recall_dagster.errors import ConfigError
from recall_dagster.writeback.keys import MANAGED_TAG, TAG_PREFIX


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int  # tries per write within one scan, the first included
    backoff_seconds: float  # wait before the second try, doubled after each failure
    max_backoff_seconds: float
    budget_seconds: float = math.inf  # the most one run may spend waiting between tries, whatever is left to try

    def delay(self, failures: int) -> float:
        """Seconds to wait after ``failures`` failed tries (1 for the first)."""
        return min(self.max_backoff_seconds, self.backoff_seconds * 2 ** (failures - 1))

    def next_wait(self, failures: int, waited: float) -> float | None:
        """The wait before the next try, or None when there is no next try: the attempts are spent, or waiting
        would take the run past its budget (a GMS down for an hour must not hold a scan for an hour)."""
        delay = self.delay(failures)
        return delay if failures < self.attempts and waited + delay <= self.budget_seconds else None


@dataclass(frozen=True)
class SlackConfig:
    webhook_url_env: str  # environment variable holding the incoming-webhook URL


@dataclass(frozen=True)
class GithubConfig:
    repo: str  # owner/name the issues are opened in
    token_env: str  # environment variable holding a token allowed to write issues
    api_url: str


@dataclass(frozen=True)
class WritebackConfig:
    tier_tags: Mapping[str, str]  # tier -> tag name; tiers not listed get no tag
    document_tier: str  # models at this tier or worse get a pre-mortem document
    incident_severity: Severity  # findings at this severity or worse open incidents
    retry: RetryPolicy
    slack: SlackConfig | None  # None: off
    github: GithubConfig | None  # None: off

    def check_tiers(self, scoring: ScoringConfig, source: str) -> None:
        """Tier names must be the scan's own, or a tag or document would never be written."""
        known = scoring.tier_names()
        for tier in (*self.tier_tags, self.document_tier):
            if tier not in known:
                raise ConfigError(
                    f"{source}: writeback names tier {tier!r}; the tiers are {', '.join(known)}"
                )


def parse_writeback_config(data: Mapping[str, Any], source: str = "recall.yaml") -> WritebackConfig:
    """The ``writeback`` section of a whole ``recall.yaml`` mapping, every mistake a ConfigError naming the key."""
    root = _Section(data, "", source).section("writeback")
    tags = root.section("tags")
    for tier in tags.data:
        name = tags.text(str(tier)) or ""
        if not name.startswith(TAG_PREFIX) or name == TAG_PREFIX:
            raise ConfigError(
                f"{source}: writeback.tags.{tier} must be a tag name starting with {TAG_PREFIX!r}"
            )
        if name == MANAGED_TAG:
            raise ConfigError(f"{source}: writeback.tags.{tier}: {MANAGED_TAG!r} marks Recall's own entities")
    retry = root.section("retry")
    notify = root.section("notify")
    slack = notify.section("slack")
    github = notify.section("github")
    return WritebackConfig(
        tier_tags={str(tier): tags.text(str(tier)) or "" for tier in tags.data},
        document_tier=root.text("document_tier") or "",
        incident_severity=root.severity("incident_severity"),
        retry=RetryPolicy(
            attempts=retry.integer("attempts", minimum=1),
            backoff_seconds=retry.number("backoff_seconds"),
            max_backoff_seconds=retry.number("max_backoff_seconds"),
            budget_seconds=retry.number("budget_seconds"),
        ),
        slack=SlackConfig(webhook_url_env=slack.text("webhook_url_env") or "")
        if slack.boolean("enabled")
        else None,
        github=GithubConfig(
            repo=github.text("repo") or "",
            token_env=github.text("token_env") or "",
            api_url=(github.text("api_url") or "").rstrip("/"),
        )
        if github.boolean("enabled")
        else None,
    )
