"""The scan's sections of ``recall.yaml``: every weight, threshold and severity the detectors and scoring read.

Retuning Recall for an estate is an edit to ``recall.yaml``, never to code.
Each section here is the file's own model (the loader checks the file against
it, and every mistake becomes a :class:`~recall_dagster.errors.ConfigError`
naming the key at fault); :class:`ScanConfig` is what a scan is handed, those
sections together. Reading the file is the caller's job: ``detect/`` touches no
filesystem.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import cached_property
from typing import Annotated, Mapping

from pydantic import BeforeValidator, Field, model_validator

from recall_dagster.config.fields import (
    KeyMistake,
    Level,
    Number,
    Positive,
    Section,
    Text,
    Texts,
    folded,
    none_is_empty_mapping,
)
from recall_dagster.detect.finding import Severity
from recall_dagster.errors import ConfigError
from recall_dagster.estate import Dataset, ResolveOptions
from recall_dagster.estate.options import ReachOptions


@dataclass(frozen=True)
class Tier:
    name: str
    minimum: int  # lowest score that reaches the tier


class Weights(Section):
    """Points a finding adds to its model's score, by its severity."""

    CRITICAL: Number = Field(description="Points a CRITICAL finding adds to its model's score.")
    WARN: Number = Field(description="Points a WARN finding adds.")
    INFO: Number = Field(description="Points an INFO finding adds.")

    @cached_property
    def points(self) -> dict[Severity, float]:
        """Severity -> points, looked up once per finding of every model a scan scores."""
        return {severity: float(getattr(self, severity.value)) for severity in Severity}


class ScoringConfig(Section):
    """score = min(max_score, sum(weight) * (1 + deployment_factor * live deployments)) (``scoring``)."""

    weights: Weights = Field(description="Points per finding, by severity.")
    deployment_factor: Number = Field(description="Each live deployment multiplies a model's score by (1 + this).")
    max_score: Positive = Field(description="The score's ceiling.")
    tiers: dict[str, Positive] = Field(
        min_length=1, description="Tier name -> lowest score reaching it (`replace: true` for a team's own tiers).")
    healthy_tier: Text = Field(description="The tier of a score of 0.")
    fail_tier: Text = Field(description="`recall scan` exits 1 when a model reaches this tier or a worse one.")

    @model_validator(mode="after")
    def _fail_tier_is_a_tier(self) -> "ScoringConfig":
        names = [*self.tiers, self.healthy_tier]
        if self.fail_tier not in names:
            raise KeyMistake("fail_tier", f"must be one of {', '.join(names)}")
        return self

    @cached_property
    def ranked(self) -> tuple[Tier, ...]:
        """The tiers, most serious first (a team's file may list them in any order)."""
        return tuple(sorted((Tier(name, minimum) for name, minimum in self.tiers.items()), key=lambda t: -t.minimum))

    def tier_names(self) -> tuple[str, ...]:
        """Every tier, most serious first, the healthy tier last."""
        return (*(t.name for t in self.ranked), self.healthy_tier)

    def at_or_above(self, tier: str, threshold: str) -> bool:
        names = self.tier_names()
        return names.index(tier) <= names.index(threshold)


class FreshnessConfig(Section):
    """How long a dataset may go unchanged (``freshness``)."""

    default_window_hours: Number = Field(description="How long a dataset no window below matches may go unchanged.")
    windows: Annotated[dict[str, Number], BeforeValidator(none_is_empty_mapping)] = Field(
        description="Dataset URN or name glob -> hours; the first match wins, a team's globs before the shipped ones.")

    def window_hours(self, dataset: Dataset) -> float:
        for pattern, hours in self.windows.items():
            if matches_dataset(pattern, dataset):
                return hours
        return self.default_window_hours


class PiiConfig(Section):
    """What marks a dataset or column as personal data (``pii``), matched in any case."""

    tags: Texts = Field(description="Tag names marking a dataset or column as personal data.")
    terms: Texts = Field(description="Glossary term names or ids doing the same.")

    @cached_property
    def folded_tags(self) -> frozenset[str]:
        return folded(self.tags)

    @cached_property
    def folded_terms(self) -> frozenset[str]:
        return folded(self.terms)


class JustificationConfig(Section):
    """What on a model documents why it may use personal data (``justification``)."""

    tags: Texts = Field(description="Tags on a model that document why it may use personal data.")
    properties: Texts = Field(description="Custom properties on a model that do the same.")

    @cached_property
    def folded_tags(self) -> frozenset[str]:
        return folded(self.tags)


class BlastRadiusConfig(Section):
    """Which findings put a dataset at risk (``blast_radius`` in recall.yaml)."""

    at_risk_detectors: Texts = Field(description="Detectors whose findings put a dataset at risk.")
    min_severity: Level = Field(description="The least severe finding that does.")


class ProfileDriftConfig(Section):
    """How far a profiled statistic may move before ``profile_drift`` reports it (``profile_drift``)."""

    row_count_change: Number = Field(description="|rows now - rows then| / rows then.")
    null_fraction_increase: Number = Field(description="Rise in the share of NULLs.")
    distinct_change: Number = Field(description="|distinct now - then| / then.")
    mean_shift: Number = Field(description="|mean now - mean then| in standard deviations then.")
    relative_mean_shift: Number = Field(
        description="The same as a share of |mean then|, when no standard deviation was profiled.")
    range_growth: Number = Field(
        description="Min or max beyond the old min..max by more than this share of that range.")


class AckPolicy(Section):
    """Which acknowledgements a scan honours (``acknowledgements`` in recall.yaml)."""

    max_days: Positive = Field(
        description="The longest an acknowledgement may last; `recall ack --until` past it exits 2, a longer one "
                    "read back is ignored and listed.")
    trusted_authors: Texts = Field(
        description="DataHub users (`alice` or `urn:li:corpuser:alice`) whose acknowledgement documents count "
                    "without Recall's signature; empty: only Recall's own.")
    key_env: Text = Field(
        description="Environment variable holding the key Recall signs its acknowledgements with, the same on "
                    "every instance sharing a graph; unset: this home's own key (state/state.key).")


class DetectorConfig(Section):
    """One detector's switch and the severity of each case it raises (``detectors.<name>``)."""

    enabled: bool = Field(default=True, description="false: the detector does not run.")
    severity: dict[str, Level] = Field(description="Case -> severity of the findings it raises.")


@dataclass(frozen=True)
class ScanConfig:
    source: str  # where it was read from, for messages
    resolve: ResolveOptions
    scoring: ScoringConfig
    freshness: FreshnessConfig
    pii: PiiConfig
    justification: JustificationConfig
    label_tables: tuple[str, ...]
    min_fan_in: int
    blast_radius: BlastRadiusConfig
    detectors: Mapping[str, DetectorConfig]
    profile_drift: ProfileDriftConfig
    acknowledgements: AckPolicy
    reach: ReachOptions = ReachOptions()  # how far a failing test is followed (lifecycle.table_level, .name_matching)
    failing_results: frozenset[str] = frozenset({"FAILURE"})  # what a failing test is (lifecycle.failing_results)

    def failing(self, result: str | None) -> bool:
        return result is not None and result in self.failing_results

    def enabled(self, detector: str) -> bool:
        return self._detector(detector).enabled

    def severity(self, detector: str, case: str) -> Severity:
        severities = self._detector(detector).severity
        if case not in severities:
            raise ConfigError(f"{self.source}: `detectors.{detector}.severity.{case}` is not set")
        return severities[case]

    def _detector(self, detector: str) -> DetectorConfig:
        if detector not in self.detectors:
            raise ConfigError(f"{self.source}: `detectors.{detector}` is not configured")
        return self.detectors[detector]


def matches_dataset(pattern: str, dataset: Dataset) -> bool:
    """A dataset matches its exact URN, or a case-insensitive glob over its name or URN."""
    if pattern == dataset.urn:
        return True
    folded = pattern.casefold()
    return fnmatchcase(dataset.name.casefold(), folded) or fnmatchcase(dataset.urn.casefold(), folded)
