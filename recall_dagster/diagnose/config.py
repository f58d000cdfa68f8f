"""The ``diagnose:`` section of ``recall.yaml``: tolerances, the abstain rule, the repair's limits.

Every mistake is a :class:`~recall_dagster.errors.ConfigError` naming the key,
raised before MLflow or the graph is read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Mapping


Signal = Literal["temporal", "lineage", "fields", "size", "corroboration"]
SIGNALS: tuple[Signal, ...] = ("temporal", "lineage", "fields", "size", "corroboration")


@dataclass(frozen=True)
class Tolerance:
    higher_is_better: bool
    tolerance: float
    relative: bool = False  # the tolerance is a share of the baseline's value, not an absolute difference


@dataclass(frozen=True)
class HypothesisConfig:
    margin: float
    floor: float
    weights: Mapping[str, float]  # signal -> weight
    counter_penalty: float


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
