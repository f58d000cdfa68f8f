"""Typed, validated view of ``recall.yaml``: every weight, threshold and severity.

Retuning Recall for an estate is an edit to ``recall.yaml``, never to code.
This module only turns already-read data into a :class:`RecallConfig`
(reading the file is the caller's job: ``detect/`` touches no filesystem), and
every mistake becomes a :class:`~recall_dagster.errors.ConfigError` naming the
key at fault.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, Iterable, Mapping

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

    def enabled(self, detector: str) -> bool:
        return self._detector(detector).enabled

    def severity(self, detector: str, case: str) -> Severity:
        severities = self._detector(detector).severity
        if case not in severities:
            raise ConfigError(f"{self.source}: detectors.{detector}.severity.{case} is not set")
        return severities[case]

    def _detector(self, detector: str) -> DetectorConfig:
        if detector not in self.detectors:
            raise ConfigError(f"{self.source}: detectors.{detector} is not configured")
        return self.detectors[detector]


def matches_dataset(pattern: str, dataset: Dataset) -> bool:
    """A dataset matches its exact URN, or a case-insensitive glob over its name or URN."""
    if pattern == dataset.urn:
        return True
    folded = pattern.casefold()
    return fnmatchcase(dataset.name.casefold(), folded) or fnmatchcase(dataset.urn.casefold(), folded)


class _Section:
    """Typed access to one mapping of the file, with errors that name the key."""

    def __init__(self, data: Any, where: str, source: str) -> None:
        if not isinstance(data, Mapping):
            raise ConfigError(f"{source}: {where or 'the file'} must be a mapping")
        self.data, self.where, self.source = data, where, source

    def _key(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def _fail(self, key: str, expected: str) -> ConfigError:
        return ConfigError(f"{self.source}: {self._key(key)} must be {expected}")

    def raw(self, key: str) -> Any:
        if key not in self.data:
            raise ConfigError(f"{self.source}: {self._key(key)} is missing")
        return self.data[key]

    def section(self, key: str) -> "_Section":
        return _Section(self.raw(key), self._key(key), self.source)

    def number(self, key: str, minimum: float = 0) -> float:
        value = self.raw(key)
        finite = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        if not finite or value < minimum:  # .nan compares false with everything: it must be refused by name
            raise self._fail(key, f"a finite number >= {minimum}")
        return float(value)

    def integer(self, key: str, minimum: int = 0) -> int:
        value = self.raw(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise self._fail(key, f"an integer >= {minimum}")
        return value

    def boolean(self, key: str) -> bool:
        value = self.raw(key)
        if not isinstance(value, bool):
            raise self._fail(key, "true or false")
        return value

    def text(self, key: str, optional: bool = False) -> str | None:
        value = self.raw(key)
        if value is None and optional:
            return None
        if not isinstance(value, str) or not value.strip():
            raise self._fail(key, "a non-empty string" + (" or null" if optional else ""))
        return value.strip()

    def texts(self, key: str) -> tuple[str, ...]:
        value = self.raw(key)
        if value is None:
            return ()
        if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
            raise self._fail(key, "a list of strings")
        return tuple(v.strip() for v in value)

    def severity(self, key: str) -> Severity:
        value = self.raw(key)
        try:
            return Severity(str(value).upper())
        except ValueError:
            raise self._fail(key, "one of " + ", ".join(s.value for s in Severity)) from None


def _folded(values: Iterable[str]) -> frozenset[str]:
    return frozenset(v.casefold() for v in values)


def _scoring(s: _Section) -> ScoringConfig:
    weights = s.section("weights")
    tiers_section = s.section("tiers")
    tiers = tuple(
        sorted(
            (Tier(str(name), tiers_section.integer(str(name), minimum=1)) for name in tiers_section.data),
            key=lambda t: -t.minimum,
        )
    )
    if not tiers:
        raise ConfigError(f"{s.source}: scoring.tiers must name at least one tier")
    healthy = s.text("healthy_tier")
    fail = s.text("fail_tier")
    scoring = ScoringConfig(
        weights={sev: weights.number(sev.value) for sev in Severity},
        deployment_factor=s.number("deployment_factor"),
        max_score=s.integer("max_score", minimum=1),
        tiers=tiers,
        healthy_tier=healthy or "",
        fail_tier=fail or "",
    )
    if scoring.fail_tier not in scoring.tier_names():
        raise ConfigError(
            f"{s.source}: scoring.fail_tier must be one of {', '.join(scoring.tier_names())}"
        )
    return scoring


def _windows(s: _Section) -> tuple[tuple[str, float], ...]:
    windows = s.raw("windows") or {}
    section = _Section(windows, s._key("windows"), s.source)
    return tuple((str(pattern), section.number(str(pattern), minimum=0)) for pattern in windows)


def reach_options(lifecycle: _Section) -> ReachOptions:
    """``lifecycle.table_level`` and ``lifecycle.name_matching``: read once for the scan and the lifecycle,
    which follow a failing test by the same rule (:mod:`recall_dagster.estate.reach`)."""
    return ReachOptions(table_level=lifecycle.boolean("table_level"), name_matching=lifecycle.boolean("name_matching"))


def parse_config(data: Mapping[str, Any], source: str = "recall.yaml") -> RecallConfig:
    """Validate the whole file at once, so a typo fails before any graph is read."""
    root = _Section(data, "", source)
    closure = root.section("closure")
    production = root.section("production")
    freshness = root.section("freshness")
    pii = root.section("pii")
    justification = root.section("justification")
    blast = root.section("blast_radius")
    drift = root.section("profile_drift")
    detectors_section = root.section("detectors")
    detectors: dict[str, DetectorConfig] = {}
    for name in detectors_section.data:
        entry = detectors_section.section(str(name))
        severities = entry.section("severity")
        detectors[str(name)] = DetectorConfig(
            enabled=entry.boolean("enabled") if "enabled" in entry.data else True,
            severity={str(case): severities.severity(str(case)) for case in severities.data},
        )
    return RecallConfig(
        source=source,
        resolve=ResolveOptions(
            max_depth=closure.integer("max_depth"),
            history_limit=closure.integer("history_limit", minimum=1),
            freshness_property=closure.text("freshness_property", optional=True),
            feature_column_properties=closure.texts("feature_column_properties"),
            live_statuses=frozenset(s.upper() for s in production.texts("live_statuses")),
            production_aliases=frozenset(production.texts("aliases")),
            production_tags=frozenset(production.texts("stage_tags")),
        ),
        scoring=_scoring(root.section("scoring")),
        freshness=FreshnessConfig(
            default_window_hours=freshness.number("default_window_hours", minimum=0),
            windows=_windows(freshness),
        ),
        pii=PiiConfig(
            tags=_folded(pii.texts("tags")),
            terms=_folded(pii.texts("terms")),
            justification_tags=_folded(justification.texts("tags")),
            justification_properties=justification.texts("properties"),
        ),
        label_tables=root.texts("label_tables"),
        min_fan_in=root.section("critical_path").integer("min_fan_in", minimum=1),
        blast_radius=BlastRadiusConfig(
            at_risk_detectors=blast.texts("at_risk_detectors"),
            min_severity=blast.severity("min_severity"),
        ),
        detectors=detectors,
        profile_drift=ProfileDriftConfig(
            row_count_change=drift.number("row_count_change"),
            null_fraction_increase=drift.number("null_fraction_increase"),
            distinct_change=drift.number("distinct_change"),
            mean_shift=drift.number("mean_shift"),
            relative_mean_shift=drift.number("relative_mean_shift"),
            range_growth=drift.number("range_growth"),
        ),
        reach=reach_options(root.section("lifecycle")),
    )
