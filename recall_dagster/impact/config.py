"""The ``impact:`` section of ``recall.yaml``: where evaluation data lives, and the verdict's thresholds.

Every mistake is a :class:`~recall_dagster.errors.ConfigError` naming the key,
raised before a model is loaded; mutations named in the file are parsed
against the allowlist here too, so a typo fails the scan, not the measurement.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Mapping

from pydantic import AfterValidator, Field

from recall_dagster.config.fields import KeyMistake, Level, Number, Section, Share, Text
from recall_dagster.errors import ConfigError
from recall_dagster.impact.mutation_spec import parse_mutation
from recall_dagster.mlflow_registry import RegistryLimits
from recall_dagster.lifecycle.rows import resolve_url
from recall_dagster.config.warehouse import NO_WAREHOUSE, Warehouse
from recall_dagster.warehouse import warehouse_connection

DRIFT_CHANGES = ("retyped", "retyped_time", "removed")


class WarnLine(Section):
    """Past either value, a measured change warns (``impact.policy.warn``)."""

    metric_loss: Number = Field(description="Relative loss of the primary metric that warns.")
    flip_rate: Share = Field(description="Share of predictions flipping that warns.")


class BlockLine(WarnLine):
    """Past these, it blocks (``impact.policy.block``)."""

    failure_rate: Share = Field(description="More than this share of rows failing inference blocks.")


def _mutation(spec: str) -> str:
    try:
        parse_mutation(spec)
    except ConfigError as err:
        raise ValueError(str(err)) from None
    return spec


MutationSpec = Annotated[Text, AfterValidator(_mutation)]


def _drift_changes(mapping: dict[str, str]) -> dict[str, str]:
    unknown = sorted(set(mapping) - set(DRIFT_CHANGES))
    if unknown:
        raise KeyMistake(unknown[0], f"is not a change Recall tells apart; known: {', '.join(DRIFT_CHANGES)}")
    return mapping


class MeasuredConfig(Section):
    """Which scan findings are replayed on their models, and what a verdict does to them (``impact.measured``)."""

    enabled: bool = Field(description="Replay a scan's findings on the models they reach.")
    production_only: bool = Field(description="Only on production model versions.")
    min_severity: Level = Field(description="The least severe finding replayed.")
    schema_drift: Annotated[dict[str, MutationSpec], AfterValidator(_drift_changes)] = Field(
        description=f"The column's change ({', '.join(DRIFT_CHANGES)}) -> the mutation replaying it.")
    failing_assertion: dict[str, MutationSpec] = Field(
        description="The failing test's class (lifecycle.classification) -> the mutation, on the failed share of "
                    "rows; a class not named is not replayed.")
    block_severity: Level = Field(description="A BLOCK raises the finding to this.")
    pass_severity: Level = Field(description="A PASS lowers it to this, with the measurement as evidence.")


@dataclass(frozen=True)
class QueryConfig:
    """Evaluation rows from the warehouse, through the training query the run logged."""

    artifact: str
    connection: str  # SQLAlchemy URL or env:VARIABLE; empty: the warehouse's dbt profile, else off
    input_prefix: str
    label_prefix: str
    max_rows: int
    warehouse: Warehouse = NO_WAREHOUSE

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
    warn: WarnLine
    block: BlockLine
    measured: MeasuredConfig
