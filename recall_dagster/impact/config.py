"""The ``impact:`` section of ``recall.yaml``: where evaluation data lives, and the verdict's thresholds.

Every mistake is a :class:`~recall_dagster.errors.ConfigError` naming the key,
raised before a model is loaded; mutations named in the file are parsed
against the allowlist here too, so a typo fails the scan, not the measurement.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping

from recall_dagster.detect import Severity
from recall_dagster.detect.config import _Section
from recall_dagster.errors import ConfigError
from recall_dagster.impact.mutation_spec import parse_mutation
from recall_dagster.registry import RegistryLimits
from recall_dagster.lifecycle.rows import resolve_url
from recall_dagster.config.warehouse import Warehouse
from recall_dagster.warehouse import warehouse_connection

DRIFT_CHANGES = ("retyped", "retyped_time", "removed")


@dataclass(frozen=True)
class Thresholds:
    metric_loss: float  # relative degradation of the primary metric
    flip_rate: float
    failure_rate: float | None = None  # only the block line has one: more than this share failing blocks


@dataclass(frozen=True)
class MeasuredConfig:
    enabled: bool
    production_only: bool
    min_severity: Severity
    schema_drift: Mapping[str, str]  # change -> mutation spec
    failing_assertion: Mapping[str, str]  # test class -> mutation spec
    block_severity: Severity
    pass_severity: Severity


@dataclass(frozen=True)
class QueryConfig:
    """Evaluation rows from the warehouse, through the training query the run logged."""

    artifact: str
    connection: str  # SQLAlchemy URL or env:VARIABLE; empty: the warehouse's dbt profile, else off
    input_prefix: str
    label_prefix: str
    max_rows: int
    warehouse: Warehouse = Warehouse(None, None, None)

    def url(self, environ: Mapping[str, str]) -> tuple[str | None, str]:
        """The URL the query reruns on, or None with the reason: ``connection``, else the dbt profile."""
        if self.connection:
            url, why = resolve_url(self.connection, environ)
            return url, f"impact.evaluation.query.connection: {why}" if why else ""
        globs, url, why = warehouse_connection(self.warehouse, environ)
        if not globs:
            return None, "impact.evaluation.query.connection is empty and no dbt project is named (warehouse:)"
        return url, why


@dataclass(frozen=True)
class ImpactConfig:
    source: str
    artifact: str
    label_column: str
    query: QueryConfig
    registry: RegistryLimits
    min_rows: int
    seed: int
    bootstrap: int
    confidence: float
    batch_rows: int
    flip_tolerance: float
    warn: Thresholds
    block: Thresholds
    measured: MeasuredConfig


def _thresholds(s: _Section, with_failures: bool) -> Thresholds:
    values = Thresholds(
        metric_loss=s.number("metric_loss"),
        flip_rate=s.number("flip_rate"),
        failure_rate=s.number("failure_rate") if with_failures else None,
    )
    if values.flip_rate > 1 or (values.failure_rate or 0) > 1:
        raise ConfigError(f"{s.source}: {s.where}.flip_rate and failure_rate are shares in [0, 1]")
    return values


def _mutations(s: _Section, allowed: tuple[str, ...] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for key in s.data:
        name = str(key)
        if allowed is not None and name not in allowed:
            raise ConfigError(f"{s.source}: {s.where}.{name} is not a change Recall tells apart; known: {', '.join(allowed)}")
        spec = s.text(name) or ""
        try:
            parse_mutation(spec)
        except ConfigError as err:
            raise ConfigError(f"{s.source}: {s.where}.{name}: {err}") from None
        out[name] = spec
    return out


def _measured(s: _Section) -> MeasuredConfig:
    return MeasuredConfig(
        enabled=s.boolean("enabled"),
        production_only=s.boolean("production_only"),
        min_severity=s.severity("min_severity"),
        schema_drift=_mutations(s.section("schema_drift"), DRIFT_CHANGES),
        failing_assertion=_mutations(s.section("failing_assertion"), None),
        block_severity=s.severity("block_severity"),
        pass_severity=s.severity("pass_severity"),
    )


def _query(s: _Section) -> QueryConfig:
    def plain(key: str) -> str:
        value = s.raw(key)
        if not isinstance(value, str):
            raise ConfigError(f"{s.source}: {s.where}.{key} must be a string (\"\" for none)")
        return value.strip()

    return QueryConfig(
        artifact=s.text("artifact") or "",
        connection=plain("connection"),
        input_prefix=plain("input_prefix"),
        label_prefix=s.text("label_prefix") or "",
        max_rows=s.integer("max_rows", minimum=1),
    )


def _registry(s: _Section) -> RegistryLimits:
    retries = s.integer("retries")
    if retries > 9:
        raise ConfigError(f"{s.source}: {s.where}.retries must be at most 9 (MLflow refuses more)")
    return RegistryLimits(timeout_seconds=s.integer("timeout_seconds", minimum=1), retries=retries)


def parse_impact_config(
    data: Mapping[str, Any], source: str = "recall.yaml", warehouse: Warehouse = Warehouse(None, None, None)
) -> ImpactConfig:
    root = _Section(data, "impact", source)
    evaluation = root.section("evaluation")
    policy = root.section("policy")
    confidence = root.number("confidence")
    if not 0 < confidence < 1:
        raise ConfigError(f"{source}: impact.confidence must be between 0 and 1")
    warn, block = _thresholds(policy.section("warn"), False), _thresholds(policy.section("block"), True)
    if warn.metric_loss > block.metric_loss or warn.flip_rate > block.flip_rate:
        raise ConfigError(f"{source}: impact.policy.warn must not be above impact.policy.block")
    return ImpactConfig(
        source=source,
        artifact=evaluation.text("artifact") or "",
        label_column=evaluation.text("label_column") or "",
        query=replace(_query(evaluation.section("query")), warehouse=warehouse),
        registry=_registry(root.section("registry")),
        min_rows=root.integer("min_rows", minimum=1),
        seed=root.integer("seed"),
        bootstrap=root.integer("bootstrap"),
        confidence=confidence,
        batch_rows=root.integer("batch_rows", minimum=1),
        flip_tolerance=root.number("flip_tolerance"),
        warn=warn,
        block=block,
        measured=_measured(root.section("measured")),
    )
