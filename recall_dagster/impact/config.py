"""The ``impact:`` section of ``recall.yaml``: where evaluation data lives, and the verdict's thresholds.

Every mistake is a :class:`~recall_dagster.errors.ConfigError` naming the key,
raised before a model is loaded; mutations named in the file are parsed
against the allowlist here too, so a typo fails the scan, not the measurement.
"""

from __future__ import annotations

from typing import Annotated, Mapping

from pydantic import AfterValidator, Field, StringConstraints, model_validator

from recall_dagster.config.fields import Count, KeyMistake, Level, Number, Positive, Section, Share, Text
from recall_dagster.errors import ConfigError
from recall_dagster.impact.mutation_spec import parse_mutation
from recall_dagster.mlflow_registry import RegistryLimits
from recall_dagster.lifecycle.rows import resolve_url
from recall_dagster.config.warehouse import Warehouse
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


class QueryConfig(Section):
    """Evaluation rows from the warehouse, through the training query the run logged
    (``impact.evaluation.query``)."""

    artifact: Text = Field(description="Run artifact holding the training query.")
    connection: Annotated[str, StringConstraints(strip_whitespace=True)] = Field(
        description='SQLAlchemy URL or env:VARIABLE holding one; "": the warehouse\'s dbt profile, else off.')
    input_prefix: Annotated[str, StringConstraints(strip_whitespace=True)] = Field(
        description='Result columns are named <prefix><model input>; "": named as the inputs.')
    label_prefix: Text = Field(description="The one result column starting with this holds the label.")
    max_rows: Positive = Field(description="Rows drawn (seeded) from the result.")

    def url(self, environ: Mapping[str, str], warehouse: Warehouse) -> tuple[str | None, str]:
        """The URL the query reruns on, or None with the reason: ``connection``, else ``warehouse``'s dbt
        profile."""
        if self.connection:
            url, why = resolve_url(self.connection, environ)
            return url, f"impact.evaluation.query.connection: {why}" if why else ""
        globs, url, why = warehouse_connection(warehouse, environ)
        if not globs:
            return None, "impact.evaluation.query.connection is empty and no dbt project is named (warehouse:)"
        return url, why


class EvaluationConfig(Section):
    """The rows a model is measured on: what its training run logged (``impact.evaluation``)."""

    artifact: Text = Field(description="Run artifact holding the model's inputs and the label (.parquet or .csv).")
    label_column: Text = Field(description="The column of that file holding the true outcome.")
    query: QueryConfig = Field(
        description="When the run logged no such rows: rerun the SQL it logged on the warehouse.")


class PolicyConfig(Section):
    """WARN from the warn line; BLOCK on a significant loss, or flips or failures past the block line."""

    warn: WarnLine
    block: BlockLine

    @model_validator(mode="after")
    def _warn_below_block(self) -> "PolicyConfig":
        if self.warn.metric_loss > self.block.metric_loss or self.warn.flip_rate > self.block.flip_rate:
            raise KeyMistake("warn", "must not be above impact.policy.block")
        return self


class ImpactConfig(Section):
    """`recall impact` and the measured severity of scan findings (``impact``)."""

    evaluation: EvaluationConfig = Field(
        description="The rows a model is measured on: what its training run logged.")
    registry: RegistryLimits = Field(description="How models and runs are read from MLflow.")
    min_rows: Positive = Field(description="Fewer evaluation rows than this is INCOMPLETE.")
    seed: Count = Field(description="The rows mutated, shuffles and the bootstrap all draw from it.")
    bootstrap: Count = Field(description="Paired bootstrap replicates for the interval of the metric's delta.")
    confidence: Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)] = Field(
        description="Of that interval.")
    batch_rows: Positive = Field(description="Rows per inference call; a call that raises fails its rows.")
    flip_tolerance: Number = Field(
        description="A regressor's prediction flips when it moves more than this x the spread of its predictions.")
    policy: PolicyConfig = Field(
        description="WARN from the warn line; BLOCK on a significant loss, or flips or failures past the block line.")
    measured: MeasuredConfig = Field(
        description="After a scan, a finding on a column reaching a production model is replayed on the model.")
