"""The ``lifecycle:`` section of ``recall.yaml``: what counts as bad data, how loud, what blocks a retrain.

Declared here, where it is read, and read as written: the scan takes from it only
how far a failing test is followed and which results fail. Every mistake is a
:class:`~recall_dagster.errors.ConfigError` naming the key, raised before any
graph is read.
"""

from __future__ import annotations

from functools import cached_property
from fnmatch import fnmatchcase
from typing import Annotated

from pydantic import AfterValidator, Field, PrivateAttr, model_validator

from recall_dagster.config.fields import Count, KeyMistake, Level, Number, Section, Share, Text, Texts
from recall_dagster.severity import Scale
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


class SeverityConfig(Section):
    """An incident's band, from the share of a model's features poisoned (``lifecycle.severity``)."""

    bands: dict[str, Number] = Field(
        description="Incident severity -> lowest share of a model's features poisoned that reaches it.")
    not_live_step_down: Count = Field(description="Levels lower for a model version no live deployment serves.")
    priorities: dict[str, Count] = Field(description="DataHub incident priority (0 critical .. 3 low) of each band.")
    ladder: dict[str, Level] = Field(
        description="Where each band stands on the one severity ladder (CRITICAL > WARN > INFO) that findings, "
                    "thresholds and the gate use; a more severe band never stands lower.")

    @model_validator(mode="after")
    def _bands_cover_zero_and_have_priorities(self) -> "SeverityConfig":
        if 0 not in self.bands.values():
            raise KeyMistake("bands", "must give one severity the share 0")
        for key, mapping, what in (("priorities", self.priorities, "a DataHub priority"),
                                   ("ladder", self.ladder, "a place on the ladder")):
            missing = [name for name in self.bands if name not in mapping]
            if missing:
                raise KeyMistake(f"{key}.{missing[0]}", f"is missing: every band needs {what}")
        ordered = sorted(self.bands, key=lambda name: -self.bands[name])
        for louder, quieter in zip(ordered, ordered[1:]):
            if self.ladder[louder].rank > self.ladder[quieter].rank:
                raise KeyMistake(f"ladder.{louder}", f"stands below {quieter}, a less severe band")
        return self

    @cached_property
    def ranked(self) -> tuple[tuple[str, float], ...]:
        """(band, lowest poisoned share reaching it), most severe first."""
        return tuple(sorted(self.bands.items(), key=lambda band: -band[1]))

    @cached_property
    def scale(self) -> Scale:
        """The bands as words of the one ladder (:mod:`recall_dagster.severity`)."""
        return Scale("incident band", tuple((name, self.ladder[name]) for name, _ in self.ranked))

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


class LifecycleConfig(Section):
    """The ``lifecycle:`` section, joined by the loader to the warehouse its row counts reach and the Dagster UI
    its verdicts link to (:meth:`joined`): both are sections of their own, so the file never sets them here."""

    failing_results: Texts = Field(
        description="Assertion results that mean the data is bad (ERROR: the test itself broke).")
    table_level: bool = Field(description="A failing assertion naming no column poisons every column of its table.")
    name_matching: bool = Field(
        description="A feature with no source-column property matches a poisoned column by its name.")
    severity: SeverityConfig = Field(description="Per model, from the share of its features poisoned.")
    classification: dict[str, Text] = Field(
        description="Glob over a test's kind (dbt test name or type) -> failure mode; the first match wins, "
                    "a team's globs before the shipped ones.")
    default_classification: Text = Field(description="The failure mode of a test no glob matches.")
    training_rows_metric: Text = Field(
        description="Prefix of the metrics a training run logs per table it read: <prefix><schema>.<table>.")
    row_counts: dict[str, Text] = Field(
        description='Glob over "<platform>:<dataset name>" -> SQLAlchemy URL or env:VARIABLE: where the gate '
                    "counts a training input's rows when no DataHub profile says; the first match wins.")
    gate: GateConfig = Field(description="`recall gate` and the blocking check on each training asset.")
    _warehouse: Warehouse = PrivateAttr(default=NO_WAREHOUSE)
    _dagster_url: str = PrivateAttr(default="")

    def joined(self, warehouse: Warehouse, dagster_url: str) -> "LifecycleConfig":
        """This section with the warehouse the row counts fall back to (its dbt profile) and
        ``dagster.webserver_url``, where a version's training run is linked."""
        joined = self.model_copy()
        joined._warehouse, joined._dagster_url = warehouse, dagster_url
        return joined

    @property
    def warehouse(self) -> Warehouse:
        return self._warehouse

    @property
    def dagster_url(self) -> str:
        return self._dagster_url

    @cached_property
    def reach(self) -> ReachOptions:
        """How far a failing test is followed, as the scan reads it too."""
        return ReachOptions(table_level=self.table_level, name_matching=self.name_matching)

    @cached_property
    def failing_outcomes(self) -> frozenset[str]:
        """The results that fail, in the case DataHub writes them."""
        return frozenset(r.upper() for r in self.failing_results)

    def failing(self, result: str | None) -> bool:
        return result is not None and result in self.failing_outcomes

    def classify(self, kind: str | None) -> str:
        folded = (kind or "").casefold()
        return next(
            (name for pattern, name in self.classification.items() if fnmatchcase(folded, pattern.casefold())),
            self.default_classification,
        )
