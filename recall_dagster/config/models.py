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


from pydantic import Field, model_validator

from recall_dagster.config.dagster import DagsterConfig
from recall_dagster.config.warehouse import Warehouse
from recall_dagster.detect.config import (
    AckPolicy,
    BlastRadiusConfig,
    DetectorConfig,
    FreshnessConfig,
    JustificationConfig,
    PiiConfig,
    ProfileDriftConfig,
    ScoringConfig,
)
from recall_dagster.diagnose.config import DiagnoseConfig
from recall_dagster.impact.config import ImpactConfig
from recall_dagster.lifecycle.config import LifecycleConfig
from recall_dagster.protect.config import ProtectConfig
from recall_dagster.rewrite import Rewrite
from recall_dagster.config.fields import (
    Count,
    KeyMistake,
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


class CriticalPath(Section):
    min_fan_in: Positive = Field(description="Upstream datasets a table must merge to be on the critical path.")


class RecallFile(Section):
    """The whole file, once every layer is laid."""

    closure: Closure
    production: Production
    freshness: FreshnessConfig
    pii: PiiConfig
    justification: JustificationConfig
    label_tables: Texts = Field(description="Dataset URN or name globs read by training only, by design.")
    critical_path: CriticalPath
    profile_drift: ProfileDriftConfig = Field(description="A profiled column a feature reads, now against training time.")
    blast_radius: BlastRadiusConfig
    scoring: ScoringConfig = Field(
        description="score = min(max_score, sum(weight) * (1 + deployment_factor * live deployments)).")
    detectors: dict[str, DetectorConfig] = Field(
        description="Every detector by name, each case's severity; a detector or case left out is refused.")
    writeback: WritebackConfig = Field(description="`recall scan --write` and the datahub_writeback asset.")
    acknowledgements: AckPolicy = Field(
        description="`recall ack`: how long an acceptance may last, and whose, from the graph, count.")
    warehouse: Warehouse = Field(description="The team's warehouse, reached through its dbt profile.")
    lifecycle: LifecycleConfig = Field(description="Data incidents, blind window and retrain gate.")
    impact: ImpactConfig = Field(description="`recall impact` and the measured severity of scan findings.")
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

