"""The ``diagnose:`` section of ``recall.yaml``: tolerances, the abstain rule, the repair's limits.

Every mistake is a :class:`~recall_dagster.errors.ConfigError` naming the key,
raised before MLflow or the graph is read.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from recall_dagster.config.fields import KeyMistake, Number, Positive, Section, Text, Texts


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


class RepairDbt(Section):
    project: Text | None = Field(description="The dbt project's directory inside `project`; null: none proposed.")
    command: Texts = Field(
        description='Run in the copy to run the added test, "{select}" and "{python}" filled in.')


class RepairConfig(Section):
    """Repairs are edited and proven in a temporary copy, never in the project (``diagnose.repair``)."""

    project: Text = Field(description="The team's project, relative to where recall runs.")
    allowed: Texts = Field(description="Globs of project files a repair may edit; empty refuses every edit.")
    protected: Texts = Field(description="Never edited, whatever `allowed` says.")
    max_changed_lines: Positive = Field(description="The largest edit a repair may propose.")
    min_recovery: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)] = Field(
        description="Proven: the biggest drop back within tolerance or this share of it won back.")
    command: Texts = Field(
        description='Run in the copy after the edit ("{model}", "{python}" filled in): retrains and prints the '
                    "metrics as its last line of JSON; empty: proposed, not proven.")
    retrain: Texts = Field(
        description='Run in the copy to retrain on the data as it stood before a failure ("{before}" too).')
    dbt: RepairDbt = Field(description="Adding the missing dbt test upstream of a failing one.")
    timeout_seconds: Annotated[float, Field(ge=1, allow_inf_nan=False)] = Field(
        description="The most one repair command may run.")
    ignore: Texts = Field(description="Left out of the copy.")


class DiagnoseConfig(Section):
    """`recall diagnose`: the metric gate, ranked causes, a proven repair (``diagnose``)."""

    metrics: dict[str, Tolerance] = Field(
        description="A candidate worse than its baseline by more than the tolerance regresses.")
    primary: Texts = Field(description="Breaks ties between metrics that lost the same share of their skill.")
    hypotheses: HypothesisConfig
    code_tags: Texts = Field(description="Run tags whose change means the training code changed.")
    transform_tag_prefix: Text = Field(
        description='Run tag per feature: "<module>:<function>@<hash>" of the code computing it.')
    repair: RepairConfig = Field(description="Repairs are edited and proven in a temporary copy, never in the project.")

    @model_validator(mode="after")
    def _primary_metrics_exist(self) -> "DiagnoseConfig":
        missing = [m for m in self.primary if m not in self.metrics]
        if missing:
            raise KeyMistake("primary", f"names {', '.join(missing)}, which diagnose.metrics lacks")
        return self
