"""The ``impact:`` section of ``recall.yaml``: where evaluation data lives, and the verdict's thresholds.

Every mistake is a :class:`~recall_dagster.errors.ConfigError` naming the key,
raised before a model is loaded; mutations named in the file are parsed
against the allowlist here too, so a typo fails the scan, not the measurement.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from recall_dagster.detect import Severity
from recall_dagster.mlflow_registry import RegistryLimits
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
