"""The ``writeback:`` section of ``recall.yaml``: tags per tier, retries, notifications.

Kept apart from the scan's config because the scan never writes: it is read
only by the commands and assets that do.  Notifications are opt-in; secrets
(the Slack webhook URL, the GitHub token) are named by environment variable,
never written in the file.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

from recall_dagster.detect import Severity


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
