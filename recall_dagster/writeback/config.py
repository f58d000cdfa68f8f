"""The ``writeback:`` section of ``recall.yaml``: tags per tier, retries, notifications.

Kept apart from the scan's config because the scan never writes: it is read
only by the commands and assets that do.  Notifications are opt-in; secrets
(the Slack webhook URL, the GitHub token) are named by environment variable,
never written in the file.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field, StringConstraints, model_validator

from recall_dagster.config.fields import KeyMistake, Level, Number, Positive, Section, Text
from recall_dagster.writeback.keys import MANAGED_TAG, TAG_PREFIX


class RetryPolicy(Section):
    """How a failed write is tried again (``writeback.retry``): per write within one scan; what still fails is
    retried by the next scan."""

    attempts: Positive = Field(description="Tries per write within one scan, the first included.")
    backoff_seconds: Number = Field(description="Wait before the second try, doubled after each failure.")
    max_backoff_seconds: Number = Field(description="The longest single wait.")
    budget_seconds: Number = Field(
        description="The most one run waits between retries in all; then what failed fails (exit 3).")

    def delay(self, failures: int) -> float:
        """Seconds to wait after ``failures`` failed tries (1 for the first)."""
        return min(self.max_backoff_seconds, self.backoff_seconds * 2 ** (failures - 1))

    def next_wait(self, failures: int, waited: float) -> float | None:
        """The wait before the next try, or None when there is no next try: the attempts are spent, or waiting
        would take the run past its budget (a GMS down for an hour must not hold a scan for an hour)."""
        delay = self.delay(failures)
        return delay if failures < self.attempts and waited + delay <= self.budget_seconds else None


class SlackConfig(Section):
    enabled: bool = Field(description="Post incidents to Slack.")
    webhook_url_env: Text = Field(description="Environment variable holding the incoming-webhook URL.")


class GithubConfig(Section):
    enabled: bool = Field(description="Open an issue per incident.")
    repo: Annotated[str, StringConstraints(strip_whitespace=True)] = Field(
        description="owner/name the issues are opened in (required when enabled).")
    token_env: Text = Field(description="Environment variable holding a token allowed to write issues.")
    api_url: Annotated[Text, AfterValidator(lambda url: url.rstrip("/"))] = Field(
        description="The GitHub API's base URL.")

    @model_validator(mode="after")
    def _repo_when_enabled(self) -> "GithubConfig":
        if self.enabled and not self.repo:
            raise KeyMistake("repo", "must name owner/name when github is enabled")
        return self


class Notify(Section):
    slack: SlackConfig
    github: GithubConfig


class WritebackConfig(Section):
    """`recall scan --write` and the datahub_writeback asset (``writeback``)."""

    tags: dict[str, Text] = Field(
        description=f"Tier -> tag on the model; every tag starting with {TAG_PREFIX!r} is Recall's to add and remove.")
    document_tier: Text = Field(description="Models at this tier or worse get a pre-mortem document.")
    incident_severity: Level = Field(description="Findings at this severity or worse open an incident.")
    retry: RetryPolicy = Field(description="Per write, within one scan; what still fails is retried next scan.")
    notify: Notify = Field(description="Opt-in; secrets are read from the environment variables named here.")

    @model_validator(mode="after")
    def _recall_tags(self) -> "WritebackConfig":
        for tier, name in self.tags.items():
            if not name.startswith(TAG_PREFIX) or name == TAG_PREFIX:
                raise KeyMistake(f"tags.{tier}", f"must be a tag name starting with {TAG_PREFIX!r}")
            if name == MANAGED_TAG:
                raise KeyMistake(f"tags.{tier}", f"must not be {MANAGED_TAG!r}, which marks Recall's own entities")
        return self

    @property
    def slack(self) -> SlackConfig | None:
        """Slack, when it is on."""
        return self.notify.slack if self.notify.slack.enabled else None

    @property
    def github(self) -> GithubConfig | None:
        """GitHub issues, when they are on."""
        return self.notify.github if self.notify.github.enabled else None
