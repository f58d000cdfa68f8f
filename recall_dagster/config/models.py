"""The shape of ``recall.yaml``, every value's range and every rule between values: one model per section.

These models are the one statement of what the file may say. The loader
checks the layered file against them whatever the command (so a typo under
``protect:`` fails ``recall gate`` too), and the configuration reference is
generated from their descriptions (:mod:`recall_dagster.config.reference`).
A section a domain reads as written is declared in that domain's own config
module (``writeback.retry`` is :class:`~recall_dagster.writeback.config.RetryPolicy`)
and only put in its place here; the sections a domain reads in another shape
(tiers sorted by score, tags case-folded, two sections as one) are declared here
and built into the domain's object by :mod:`recall_dagster.config.build`.
:mod:`recall_dagster.config.fields` says what a section is made of.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StringConstraints, model_validator

from recall_dagster.config.dagster import DagsterConfig
from recall_dagster.config.warehouse import Warehouse
from recall_dagster.detect.config import (
    AckPolicy,
    BlastRadiusConfig,
    DetectorConfig,
    FreshnessConfig,
    ProfileDriftConfig,
)
from recall_dagster.diagnose.config import DiagnoseConfig
from recall_dagster.impact.config import BlockLine, MeasuredConfig, WarnLine
from recall_dagster.mlflow_registry import RegistryLimits
from recall_dagster.lifecycle.config import GateConfig
from recall_dagster.protect.config import ProtectConfig
from recall_dagster.rewrite import Rewrite
from recall_dagster.config.fields import (
    Count,
    KeyMistake,
    Level,
    Number,
    Positive,
    Section,
    Text,
    Texts,
)
from recall_dagster.writeback.config import WritebackConfig




class Closure(Section):
    max_depth: Count = Field(description="Upstream hops followed above the datasets features and training runs read.")
    history_limit: Positive = Field(description="Operations and assertion runs read per entity.")
    freshness_property: Text | None = Field(
        description="Custom property read as a dataset's last refresh when no operation or lastModified exists.")
    feature_column_properties: Texts = Field(description="mlFeature custom properties that name its source column.")


class Production(Section):
    aliases: Texts = Field(description="Registry aliases that mark a model version production (any case).")
    stage_tags: Texts = Field(description="Stage tags that do the same (DataHub's MLflow source writes mlflow_<stage>).")
    live_statuses: Texts = Field(description="mlModelDeploymentProperties.status values that serve traffic.")


class Pii(Section):
    tags: Texts = Field(description="Tag names marking a dataset or column as personal data.")
    terms: Texts = Field(description="Glossary term names or ids doing the same.")


class Justification(Section):
    tags: Texts = Field(description="Tags on a model that document why it may use personal data.")
    properties: Texts = Field(description="Custom properties on a model that do the same.")


class CriticalPath(Section):
    min_fan_in: Positive = Field(description="Upstream datasets a table must merge to be on the critical path.")


class Weights(Section):
    CRITICAL: Number = Field(description="Points a CRITICAL finding adds to its model's score.")
    WARN: Number = Field(description="Points a WARN finding adds.")
    INFO: Number = Field(description="Points an INFO finding adds.")


class Scoring(Section):
    weights: Weights = Field(description="Points per finding, by severity.")
    deployment_factor: Number = Field(description="Each live deployment multiplies a model's score by (1 + this).")
    max_score: Positive = Field(description="The score's ceiling.")
    tiers: dict[str, Positive] = Field(
        min_length=1, description="Tier name -> lowest score reaching it (`replace: true` for a team's own tiers).")
    healthy_tier: Text = Field(description="The tier of a score of 0.")
    fail_tier: Text = Field(description="`recall scan` exits 1 when a model reaches this tier or a worse one.")

    @model_validator(mode="after")
    def _fail_tier_is_a_tier(self) -> "Scoring":
        names = [*self.tiers, self.healthy_tier]
        if self.fail_tier not in names:
            raise KeyMistake("fail_tier", f"must be one of {', '.join(names)}")
        return self


class LifecycleSeverity(Section):
    bands: dict[str, Number] = Field(
        description="Incident severity -> lowest share of a model's features poisoned that reaches it.")
    not_live_step_down: Count = Field(description="Levels lower for a model version no live deployment serves.")
    priorities: dict[str, Count] = Field(description="DataHub incident priority (0 critical .. 3 low) of each band.")
    ladder: dict[str, Level] = Field(
        description="Where each band stands on the one severity ladder (CRITICAL > WARN > INFO) that findings, "
                    "thresholds and the gate use; a more severe band never stands lower.")

    @model_validator(mode="after")
    def _bands_cover_zero_and_have_priorities(self) -> "LifecycleSeverity":
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


class Lifecycle(Section):
    failing_results: Texts = Field(
        description="Assertion results that mean the data is bad (ERROR: the test itself broke).")
    table_level: bool = Field(description="A failing assertion naming no column poisons every column of its table.")
    name_matching: bool = Field(
        description="A feature with no source-column property matches a poisoned column by its name.")
    severity: LifecycleSeverity = Field(description="Per model, from the share of its features poisoned.")
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


class Query(Section):
    artifact: Text = Field(description="Run artifact holding the training query.")
    connection: Annotated[str, StringConstraints(strip_whitespace=True)] = Field(
        description='SQLAlchemy URL or env:VARIABLE holding one; "": the warehouse\'s dbt profile, else off.')
    input_prefix: Annotated[str, StringConstraints(strip_whitespace=True)] = Field(
        description='Result columns are named <prefix><model input>; "": named as the inputs.')
    label_prefix: Text = Field(description="The one result column starting with this holds the label.")
    max_rows: Positive = Field(description="Rows drawn (seeded) from the result.")


class Evaluation(Section):
    artifact: Text = Field(description="Run artifact holding the model's inputs and the label (.parquet or .csv).")
    label_column: Text = Field(description="The column of that file holding the true outcome.")
    query: Query = Field(description="When the run logged no such rows: rerun the SQL it logged on the warehouse.")


class Policy(Section):
    warn: WarnLine
    block: BlockLine

    @model_validator(mode="after")
    def _warn_below_block(self) -> "Policy":
        if self.warn.metric_loss > self.block.metric_loss or self.warn.flip_rate > self.block.flip_rate:
            raise KeyMistake("warn", "must not be above impact.policy.block")
        return self


class Impact(Section):
    evaluation: Evaluation = Field(description="The rows a model is measured on: what its training run logged.")
    registry: RegistryLimits = Field(description="How models and runs are read from MLflow.")
    min_rows: Positive = Field(description="Fewer evaluation rows than this is INCOMPLETE.")
    seed: Count = Field(description="The rows mutated, shuffles and the bootstrap all draw from it.")
    bootstrap: Count = Field(description="Paired bootstrap replicates for the interval of the metric's delta.")
    confidence: Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)] = Field(
        description="Of that interval.")
    batch_rows: Positive = Field(description="Rows per inference call; a call that raises fails its rows.")
    flip_tolerance: Number = Field(
        description="A regressor's prediction flips when it moves more than this x the spread of its predictions.")
    policy: Policy = Field(
        description="WARN from the warn line; BLOCK on a significant loss, or flips or failures past the block line.")
    measured: MeasuredConfig = Field(
        description="After a scan, a finding on a column reaching a production model is replayed on the model.")


class RecallFile(Section):
    """The whole file, once every layer is laid."""

    closure: Closure
    production: Production
    freshness: FreshnessConfig
    pii: Pii
    justification: Justification
    label_tables: Texts = Field(description="Dataset URN or name globs read by training only, by design.")
    critical_path: CriticalPath
    profile_drift: ProfileDriftConfig = Field(description="A profiled column a feature reads, now against training time.")
    blast_radius: BlastRadiusConfig
    scoring: Scoring = Field(
        description="score = min(max_score, sum(weight) * (1 + deployment_factor * live deployments)).")
    detectors: dict[str, DetectorConfig] = Field(
        description="Every detector by name, each case's severity; a detector or case left out is refused.")
    writeback: WritebackConfig = Field(description="`recall scan --write` and the datahub_writeback asset.")
    acknowledgements: AckPolicy = Field(
        description="`recall ack`: how long an acceptance may last, and whose, from the graph, count.")
    warehouse: Warehouse = Field(description="The team's warehouse, reached through its dbt profile.")
    lifecycle: Lifecycle = Field(description="Data incidents, blind window and retrain gate.")
    impact: Impact = Field(description="`recall impact` and the measured severity of scan findings.")
    protect: ProtectConfig = Field(description="`recall protect`: reliability of each dataset on a production path.")
    diagnose: DiagnoseConfig = Field(description="`recall diagnose`: the metric gate, ranked causes, a proven repair.")
    narration: Rewrite = Field(description="The paragraphs people read for findings, verdicts and blind windows.")
    dagster: DagsterConfig = Field(description="The `recall` code location and its sensors.")

    @model_validator(mode="after")
    def _writeback_names_real_tiers(self) -> "RecallFile":
        known = [*self.scoring.tiers, self.scoring.healthy_tier]
        for key, tier in [*((f"tags.{t}", t) for t in self.writeback.tags), ("document_tier", self.writeback.document_tier)]:
            if tier not in known:
                raise KeyMistake(f"writeback.{key}", f"names tier {tier!r}, which scoring.tiers does not have "
                                                     f"({', '.join(known)}): name your own tiers there too")
        return self

