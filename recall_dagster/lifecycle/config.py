"""The ``lifecycle:`` section of ``recall.yaml``: what counts as bad data, how loud, what blocks a retrain.

Kept apart from the scan's config (as ``writeback:`` is) because only the
lifecycle reads it; every mistake is a :class:`~recall_dagster.errors.ConfigError`
naming the key, raised before any graph is read.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from fnmatch import fnmatchcase
from typing import Annotated, Mapping

from pydantic import AfterValidator, Field

from recall_dagster.config.fields import Level, Section, Share, Texts
from recall_dagster.severity import Scale, Severity
from recall_dagster.estate.options import ReachOptions
from recall_dagster.config.warehouse import NO_WAREHOUSE, Warehouse

# Every check the retrain gate runs, in report order (recall_dagster/lifecycle/retrain_gate.py implements them).
CHECK_NAMES: tuple[str, ...] = (
    "risk_tier",
    "active_incidents",
    "failing_assertions",
    "contaminated_version",
    "input_freshness",
    "schema_drift",
    "training_serving_skew",
    "ownership",
    "pii_justification",
    "row_count_drop",
    "feature_coverage",
    "deprecated_inputs",
    "measured_impact",
)


@dataclass(frozen=True)
class SeverityConfig:
    bands: tuple[tuple[str, float], ...]  # (severity, lowest poisoned share reaching it), most severe first
    not_live_step_down: int  # levels lower for a version no live deployment serves
    priorities: Mapping[str, int]  # severity -> DataHub incident priority (0 critical .. 3 low)
    ladder: Mapping[str, Severity]  # severity -> where it stands on the one ladder

    @cached_property
    def scale(self) -> Scale:
        """The bands as words of the one ladder (:mod:`recall_dagster.severity`)."""
        return Scale("incident band", tuple((name, self.ladder[name]) for name, _ in self.bands))

    @property
    def names(self) -> tuple[str, ...]:
        return self.scale.names

    def rank(self, severity: str) -> int:
        """0 for the most severe, so ``min`` by rank picks the loudest."""
        return self.scale.rank(severity)


def _known_checks(names: list[str]) -> list[str]:
    unknown = sorted(set(names) - set(CHECK_NAMES))
    if unknown:
        raise ValueError(f"names unknown check(s) {', '.join(unknown)}; known: {', '.join(CHECK_NAMES)}")
    return names


CheckNames = Annotated[Texts, AfterValidator(_known_checks)]


class GateConfig(Section):
    """`recall gate` and the blocking check on each training asset (``lifecycle.gate``)."""

    disabled: CheckNames = Field(description="Checks the retrain gate skips.")
    advisory: CheckNames = Field(
        description="Checks whose failure is shown (WARN) but does not refuse the retrain.")
    min_severity: Level = Field(description="Scan findings at or above this fail the detector-backed checks.")
    max_row_drop: Share = Field(description="A training input that lost more than this share of its rows fails.")
    min_feature_coverage: Share = Field(
        description="Share of features that must resolve to an existing column of their source.")
    block_unknown: bool = Field(
        description="Whether an UNKNOWN blind-window verdict on the judged version blocks like CONTAMINATED.")
    required: CheckNames = Field(
        description="Checks that must measure: one skipped makes the verdict UNVERIFIED (exit 4).")
    block_unverified: bool = Field(
        description="The Dagster gate refuses a retrain on UNVERIFIED (and when no version can be found).")


@dataclass(frozen=True)
class LifecycleConfig:
    source: str
    failing_results: frozenset[str]
    reach: ReachOptions  # how far a failing test is followed (table_level, name_matching)
    severity: SeverityConfig
    classification: tuple[tuple[str, str], ...]  # (glob over the test's kind, class), first match wins
    default_classification: str
    gate: GateConfig
    training_rows_metric: str  # prefix of the metrics a training run logs per table read: <prefix><schema>.<table>
    row_counts: tuple[tuple[str, str], ...]  # (glob over "platform:name", SQLAlchemy URL or env:VARIABLE)
    warehouse: Warehouse = NO_WAREHOUSE  # the dbt profile tried after row_counts
    dagster_url: str = ""  # dagster.webserver_url: where a version's training run is linked

    def failing(self, result: str | None) -> bool:
        return result is not None and result in self.failing_results

    def classify(self, kind: str | None) -> str:
        folded = (kind or "").casefold()
        return next(
            (name for pattern, name in self.classification if fnmatchcase(folded, pattern.casefold())),
            self.default_classification,
        )
