"""Typed, validated view of ``recall.yaml``: every weight, threshold and severity.

Retuning Recall for an estate is an edit to ``recall.yaml``, never to code.
This module only turns already-read data into a :class:`RecallConfig`
(reading the file is the caller's job: ``detect/`` touches no filesystem), and
every mistake becomes a :class:`~recall_dagster.errors.ConfigError` naming the
key at fault.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Mapping

from recall_dagster.detect.finding import Severity
from recall_dagster.errors import ConfigError
from recall_dagster.estate import Dataset, ResolveOptions
from recall_dagster.estate.options import ReachOptions


@dataclass(frozen=True)
class Tier:
    name: str
    minimum: int  # lowest score that reaches the tier


@dataclass(frozen=True)
class ScoringConfig:
    weights: Mapping[Severity, float]
    deployment_factor: float  # each live deployment multiplies a model's risk by (1 + factor)
    max_score: int
    tiers: tuple[Tier, ...]  # most serious first
    healthy_tier: str  # the tier of a score of 0
    fail_tier: str  # a model at this tier or worse fails the scan

    def tier_names(self) -> tuple[str, ...]:
        """Every tier, most serious first, the healthy tier last."""
        return (*(t.name for t in self.tiers), self.healthy_tier)

    def at_or_above(self, tier: str, threshold: str) -> bool:
        names = self.tier_names()
        return names.index(tier) <= names.index(threshold)


@dataclass(frozen=True)
class FreshnessConfig:
    default_window_hours: float
    windows: tuple[tuple[str, float], ...]  # (dataset URN or name glob, hours), first match wins

    def window_hours(self, dataset: Dataset) -> float:
        for pattern, hours in self.windows:
            if matches_dataset(pattern, dataset):
                return hours
        return self.default_window_hours


@dataclass(frozen=True)
class PiiConfig:
    tags: frozenset[str]  # case-folded tag names that mark PII
    terms: frozenset[str]  # case-folded glossary term names or ids that mark PII
    justification_tags: frozenset[str]  # case-folded tag names on a model that justify PII use
    justification_properties: tuple[str, ...]  # custom properties on a model that justify it


@dataclass(frozen=True)
class BlastRadiusConfig:
    at_risk_detectors: tuple[str, ...]  # whose findings put a dataset at risk
    min_severity: Severity


@dataclass(frozen=True)
class ProfileDriftConfig:
    """How far a profiled statistic may move before ``profile_drift`` reports it."""

    row_count_change: float  # relative
    null_fraction_increase: float  # absolute rise in the share of NULLs
    distinct_change: float  # relative
    mean_shift: float  # in the reference's standard deviations
    relative_mean_shift: float  # share of the reference mean, when no standard deviation was profiled
    range_growth: float  # how far beyond the reference min..max, as a share of that range


@dataclass(frozen=True)
class AckPolicy:
    """Which acknowledgements a scan honours (``acknowledgements`` in recall.yaml)."""

    max_days: int = 90  # the longest an acknowledgement may last
    trusted_authors: frozenset[str] = frozenset()  # DataHub users whose unsigned documents count
    key_env: str = "RECALL_ACK_KEY"  # where the key shared by the instances on one graph is, when it is


@dataclass(frozen=True)
class DetectorConfig:
    enabled: bool
    severity: Mapping[str, Severity]  # case name -> severity


@dataclass(frozen=True)
class RecallConfig:
    source: str  # where it was read from, for messages
    resolve: ResolveOptions
    scoring: ScoringConfig
    freshness: FreshnessConfig
    pii: PiiConfig
    label_tables: tuple[str, ...]
    min_fan_in: int
    blast_radius: BlastRadiusConfig
    detectors: Mapping[str, DetectorConfig]
    profile_drift: ProfileDriftConfig
    reach: ReachOptions = ReachOptions()  # how far a failing test is followed (lifecycle.table_level, .name_matching)
    failing_results: frozenset[str] = frozenset({"FAILURE"})  # what a failing test is (lifecycle.failing_results)
    acknowledgements: AckPolicy = AckPolicy()

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
