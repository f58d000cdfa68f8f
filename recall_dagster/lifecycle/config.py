"""The ``lifecycle:`` section of ``recall.yaml``: what counts as bad data, how loud, what blocks a retrain.

Kept apart from the scan's config (as ``writeback:`` is) because only the
lifecycle reads it; every mistake is a :class:`~recall_dagster.errors.ConfigError`
naming the key, raised before any graph is read.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, Mapping

from recall_dagster.detect import Severity
from recall_dagster.detect.config import _Section, reach_options
from recall_dagster.estate.options import ReachOptions
from recall_dagster.errors import ConfigError
from recall_dagster.config.warehouse import Warehouse

# Every check the retrain gate runs, in report order (recall_dagster/lifecycle/gate.py implements them).
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

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.bands)

    def rank(self, severity: str) -> int:
        """0 for the most severe, so ``min`` by rank picks the loudest."""
        return self.names.index(severity)


@dataclass(frozen=True)
class GateConfig:
    disabled: frozenset[str]
    advisory: frozenset[str]  # checks whose failure is a WARN: shown, never refusing the retrain
    min_severity: Severity  # scan findings at or above this fail the detector-backed checks
    max_row_drop: float
    min_feature_coverage: float
    block_unknown: bool
    required: frozenset[str]  # checks whose SKIP makes the verdict UNVERIFIED
    block_unverified: bool  # whether the Dagster gate blocks a retrain on UNVERIFIED


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
    warehouse: Warehouse = Warehouse(None, None, None)  # the dbt profile tried after row_counts

    def failing(self, result: str | None) -> bool:
        return result is not None and result in self.failing_results

    def classify(self, kind: str | None) -> str:
        folded = (kind or "").casefold()
        return next(
            (name for pattern, name in self.classification if fnmatchcase(folded, pattern.casefold())),
            self.default_classification,
        )


def _severity(s: _Section) -> SeverityConfig:
    bands_section = s.section("bands")
    bands = tuple(
        sorted(
            ((str(name), bands_section.number(str(name))) for name in bands_section.data),
            key=lambda band: -band[1],
        )
    )
    if not bands or bands[-1][1] != 0:
        raise ConfigError(f"{s.source}: lifecycle.severity.bands must give one severity the share 0")
    priorities_section = s.section("priorities")
    priorities = {name: priorities_section.integer(name) for name, _ in bands}
    return SeverityConfig(
        bands=bands,
        not_live_step_down=s.integer("not_live_step_down"),
        priorities=priorities,
    )


def _gate(s: _Section) -> GateConfig:
    disabled, required = frozenset(s.texts("disabled")), frozenset(s.texts("required"))
    advisory = frozenset(s.texts("advisory"))
    for key, names in (("disabled", disabled), ("required", required), ("advisory", advisory)):
        unknown = sorted(names - set(CHECK_NAMES))
        if unknown:
            raise ConfigError(
                f"{s.source}: lifecycle.gate.{key} names unknown check(s) {', '.join(unknown)}; "
                f"known: {', '.join(CHECK_NAMES)}"
            )
    drop, coverage = s.number("max_row_drop"), s.number("min_feature_coverage")
    if drop > 1 or coverage > 1:
        raise ConfigError(f"{s.source}: lifecycle.gate.max_row_drop and min_feature_coverage are shares in [0, 1]")
    return GateConfig(
        disabled=disabled,
        advisory=advisory,
        min_severity=s.severity("min_severity"),
        max_row_drop=drop,
        min_feature_coverage=coverage,
        block_unknown=s.boolean("block_unknown"),
        required=required,
        block_unverified=s.boolean("block_unverified"),
    )


def parse_lifecycle_config(
    data: Mapping[str, Any], source: str = "recall.yaml", warehouse: Warehouse = Warehouse(None, None, None)
) -> LifecycleConfig:
    """The ``lifecycle`` mapping as typed config, every mistake a ConfigError naming the key."""
    root = _Section(data, "lifecycle", source)
    classes = root.section("classification")
    return LifecycleConfig(
        source=source,
        failing_results=frozenset(r.upper() for r in root.texts("failing_results")),
        reach=reach_options(root),
        severity=_severity(root.section("severity")),
        classification=tuple((str(p), classes.text(str(p)) or "") for p in classes.data),
        default_classification=root.text("default_classification") or "",
        gate=_gate(root.section("gate")),
        training_rows_metric=root.text("training_rows_metric") or "",
        row_counts=_row_counts(root.section("row_counts")),
        warehouse=warehouse,
    )


def _row_counts(s: _Section) -> tuple[tuple[str, str], ...]:
    return tuple((str(glob), s.text(str(glob)) or "") for glob in s.data)
