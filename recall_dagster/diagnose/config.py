"""The ``diagnose:`` section of ``recall.yaml``: tolerances, the abstain rule, the repair's limits.

Every mistake is a :class:`~recall_dagster.errors.ConfigError` naming the key,
raised before MLflow or the graph is read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from recall_dagster.detect.config import _Section
from recall_dagster.errors import ConfigError

SIGNALS = ("temporal", "lineage", "fields", "size", "corroboration")


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


def _metrics(s: _Section) -> dict[str, Tolerance]:
    out = {}
    for name in s.data:
        entry = s.section(str(name))
        out[str(name)] = Tolerance(
            higher_is_better=entry.boolean("higher_is_better"),
            tolerance=entry.number("tolerance"),
            relative=entry.boolean("relative") if "relative" in entry.data else False,
        )
    return out


def _hypotheses(s: _Section) -> HypothesisConfig:
    weights = s.section("weights")
    unknown = sorted(set(map(str, weights.data)) - set(SIGNALS))
    if unknown:
        raise ConfigError(f"{s.source}: diagnose.hypotheses.weights names unknown signal(s) {', '.join(unknown)}; "
                          f"known: {', '.join(SIGNALS)}")
    return HypothesisConfig(
        margin=s.number("margin"),
        floor=s.number("floor"),
        weights={name: weights.number(name) if name in weights.data else 0.0 for name in SIGNALS},
        counter_penalty=s.number("counter_penalty"),
    )


def _repair(s: _Section) -> RepairConfig:
    dbt = s.section("dbt")
    recovery = s.number("min_recovery")
    if not 0 < recovery <= 1:
        raise ConfigError(f"{s.source}: diagnose.repair.min_recovery must be a share in (0, 1], got {recovery:g}")
    return RepairConfig(
        project=s.text("project") or ".",
        allowed=s.texts("allowed"),
        protected=s.texts("protected"),
        max_changed_lines=s.integer("max_changed_lines", minimum=1),
        command=s.texts("command"),
        timeout_seconds=s.number("timeout_seconds", minimum=1),
        ignore=s.texts("ignore"),
        min_recovery=recovery,
        retrain=s.texts("retrain"),
        dbt_project=dbt.text("project", optional=True) or "",
        dbt_command=dbt.texts("command"),
    )


def parse_diagnose_config(data: Mapping[str, Any], source: str = "recall.yaml") -> DiagnoseConfig:
    root = _Section(data, "diagnose", source)
    metrics = _metrics(root.section("metrics"))
    primary = root.texts("primary")
    missing = [m for m in primary if m not in metrics]
    if missing:
        raise ConfigError(f"{source}: diagnose.primary names {', '.join(missing)}, which diagnose.metrics lacks")
    return DiagnoseConfig(
        source=source,
        metrics=metrics,
        primary=primary,
        hypotheses=_hypotheses(root.section("hypotheses")),
        code_tags=root.texts("code_tags"),
        transform_tag_prefix=root.text("transform_tag_prefix") or "",
        repair=_repair(root.section("repair")),
    )
