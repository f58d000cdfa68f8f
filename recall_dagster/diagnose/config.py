"""The ``diagnose:`` section of ``recall.yaml``: tolerances, the abstain rule, the repair's limits.

Every mistake is a :class:`~recall_dagster.errors.ConfigError` naming the key,
raised before MLflow or the graph is read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Mapping

from pydantic import Field

from recall_dagster.config.fields import Number, Section


Signal = Literal["temporal", "lineage", "fields", "size", "corroboration"]
SIGNALS: tuple[Signal, ...] = ("temporal", "lineage", "fields", "size", "corroboration")


class Tolerance(Section):
    """How much worse than its baseline one metric may be (``diagnose.metrics.<name>``)."""

    higher_is_better: bool = Field(description="false for an error metric (mae, rmse).")
    tolerance: Number = Field(description="How much worse than the baseline still passes.")
    relative: bool = Field(default=False, description="The tolerance is a share of the baseline's value.")


class HypothesisConfig(Section):
    """How competing causes are weighed, and when the diagnosis abstains (``diagnose.hypotheses``)."""

    margin: Number = Field(description="INCONCLUSIVE when the best two scores are closer than this.")
    floor: Number = Field(description="INCONCLUSIVE when the best score is below it.")
    weights: dict[Signal, Number] = Field(
        description=f"Weight of each signal ({', '.join(SIGNALS)}); a signal left out weighs 0.")
    counter_penalty: Number = Field(description="Taken off a hypothesis per piece of evidence against it.")


@dataclass(frozen=True)
class RepairConfig:
    project: str
    allowed: tuple[str, ...]
    protected: tuple[str, ...]
    max_changed_lines: int
    command: tuple[str, ...]
    timeout_seconds: float
    ignore: tuple[str, ...]
    min_recovery: float = 1.0
    retrain: tuple[str, ...] = ()
    dbt_project: str = ""
    dbt_command: tuple[str, ...] = ()


@dataclass(frozen=True)
class DiagnoseConfig:
    source: str
    metrics: Mapping[str, Tolerance]
    primary: tuple[str, ...]
    hypotheses: HypothesisConfig
    code_tags: tuple[str, ...]
    transform_tag_prefix: str
    repair: RepairConfig
