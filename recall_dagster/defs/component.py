"""``RecallComponent``: Recall declared in a ``defs.yaml`` of a Dagster components project (``dg``).

::

    # defs/recall/defs.yaml  (dg scaffold defs recall_dagster.RecallComponent recall --training-asset ml/churn_model
    #                         --registered-model churn_model)
    type: recall_dagster.RecallComponent
    attributes:
      automation: running                 # sensors and nightly schedule; stopped unless said
      scan_after: [datahub/ingest]        # any of recall.yaml's dagster: keys, laid over it
      gates:
        - training_asset: ml/churn_model
          registered_model: churn_model

The scan, the incidents, the jobs, the sensors and the schedule are
:func:`~recall_dagster.defs.recall_definitions`, configured by ``recall.yaml``
(``config_file``, else ``RECALL_CONFIG``) and the environment, as in Python.

**The gates.** In Python, :func:`~recall_dagster.defs.retrain_gate` takes the
team's training asset and returns it rebuilt behind the gate: its own step asks
the gate too, so a run that leaves the gate out is judged all the same. A
component cannot do that to an asset another component defines: Dagster 1.13
merges components' definitions and refuses two definitions of one key, and its
public post-processing (``post_processing`` in a ``defs.yaml``) changes only
specs, of its own folder's assets, never a compute function. So each gate is
the gate asset alone (:func:`~recall_dagster.defs.retrain_gate.retrain_gate_asset`: the
same asset and **blocking** checks ``retrain_gate`` and ``measured_impact``),
and the training lists the gate's key among its own ``deps``
(``deps=[..., "ml/churn_model_retrain_gate"]``): Dagster then skips the training
in any run where the gate refuses. Declared in the asset's decorator, not by a
post-processing: in Dagster 1.13.27 a dependency added to a spec afterwards
does not order the two steps (see :mod:`recall_dagster.defs._compat`).

The component finds the training among the project's other components, so the
gate runs after everything the training reads, in its group and partitions; a
training that is missing, or that does not depend on its gate, fails the load
(``dg check defs``) naming the fix rather than train ungated. What the yaml
gate does not hold: a run that materializes the training without the gate step
(the UI's "Materialize" on the training alone) is not judged. A team that needs
that keeps the training in Python behind :func:`retrain_gate`.
"""

from pathlib import Path
from typing import Literal

from dagster import (
    AssetKey,
    AssetsDefinition,
    AssetSpec,
    Component,
    ComponentLoadContext,
    DefaultSensorStatus,
    Definitions,
    Model,
    PartitionsDefinition,
    Resolvable,
    Scaffolder,
    ScaffoldRequest,
    scaffold_with,
)
from dagster.components import scaffold_component
from pydantic import BaseModel, Field

from recall_dagster.config.load import load
from recall_dagster.defs import recall_definitions
from recall_dagster.defs._compat import other_components_defs
from recall_dagster.defs.retrain_gate import retrain_gate_asset
from recall_dagster.defs.resources import RecallResource
from recall_dagster.defs.translator import RecallTranslator

# The attributes that stand for recall.yaml's dagster: keys of the same names.
DAGSTER_KEYS = {"scan_after", "mlflow_models", "sensor_interval_seconds", "nightly_scan_cron", "scan_shards"}


class RecallGate(Model, Resolvable):
    """One retrain gate: the training asset it stands in front of, the registered model it judges."""

    training_asset: str = Field(description="The training asset's key, `/`-separated: ml/churn_model.")
    registered_model: str = Field(
        description="The model as the registry names it (churn_model), or name/version to judge one version."
    )


class RecallScaffoldParams(BaseModel):
    """``dg scaffold defs recall_dagster.RecallComponent <path> --training-asset ml/churn_model
    --registered-model churn_model`` writes a gate; without them, none."""

    training_asset: str | None = None
    registered_model: str | None = None


class RecallComponentScaffolder(Scaffolder[RecallScaffoldParams]):
    """Writes a ``defs.yaml`` declaring Recall, with its automation stopped and one gate when asked for."""

    @classmethod
    def get_scaffold_params(cls) -> type[RecallScaffoldParams]:
        return RecallScaffoldParams

    def scaffold(self, request: ScaffoldRequest[RecallScaffoldParams]) -> None:
        params = request.params
        if (params.training_asset is None) != (params.registered_model is None):
            raise ValueError("a gate needs both --training-asset and --registered-model")
        gates = [{"training_asset": params.training_asset, "registered_model": params.registered_model}]
        scaffold_component(request, {"automation": "stopped", "gates": gates if params.training_asset else []})


@scaffold_with(RecallComponentScaffolder)
class RecallComponent(Component, Model, Resolvable):
    """Recall's scan, incidents, jobs, sensors, nightly schedule and retrain gates, declared in YAML.

    Every ``dagster:`` key left out keeps ``recall.yaml``'s value.
    """

    config_file: str | None = Field(
        default=None,
        description="A recall.yaml laid over the shipped defaults, relative to this defs.yaml; "
                    "RECALL_CONFIG when left out.",
    )
    automation: Literal["running", "stopped"] = Field(
        default="stopped", description="Whether Recall's sensors and nightly schedule start running.",
    )
    scan_after: list[str] | None = Field(default=None, description="Asset keys the scan and incidents run after.")
    mlflow_models: list[str] | None = Field(default=None, description="Registered models the MLflow sensor polls.")
    sensor_interval_seconds: int | None = Field(default=None, ge=1, description="How often the sensors look.")
    nightly_scan_cron: str | None = Field(default=None, description="When the nightly full scan runs (UTC).")
    scan_shards: int | None = Field(default=None, ge=1, description="Partitions the nightly scan fans out over.")
    gates: list[RecallGate] = Field(
        default_factory=list,
        description="Retrain gates; each training asset lists its gate (<key>_retrain_gate) among its deps.",
    )

    def build_defs(self, context: ComponentLoadContext) -> Definitions:
        """:func:`recall_definitions` as declared, and a gate asset per ``gates`` entry."""
        config_file = None if self.config_file is None else str(context.path / Path(self.config_file))
        resource = RecallResource.from_env(config_file)
        declared = self.model_dump(include=DAGSTER_KEYS, exclude_none=True)
        config = load(resource.config_file()).dagster.model_copy(update=declared)
        status = DefaultSensorStatus.RUNNING if self.automation == "running" else DefaultSensorStatus.STOPPED
        recall = recall_definitions(resource, config, default_status=status)
        if not self.gates:
            return recall
        trainings = _trainings(context, [AssetKey.from_user_string(g.training_asset) for g in self.gates])
        gates = [retrain_gate_asset(spec, gate.registered_model, partitions=partitions)
                 for gate, (spec, partitions) in zip(self.gates, trainings)]
        return Definitions.merge(recall, Definitions(assets=gates))


def _trainings(context: ComponentLoadContext,
               keys: list[AssetKey]) -> list[tuple[AssetSpec, PartitionsDefinition | None]]:
    """Each training's spec and partitions, from the project's other components; refused when one is missing or
    does not depend on its gate (Dagster would run it ungated)."""
    found: dict[AssetKey, tuple[AssetSpec, PartitionsDefinition | None]] = {}
    for defs in other_components_defs(context):
        for asset in defs.assets or []:
            if isinstance(asset, AssetsDefinition):
                found.update({s.key: (s, asset.partitions_def) for s in asset.specs if s.key in keys})
            elif isinstance(asset, AssetSpec) and asset.key in keys:
                found[asset.key] = (asset, asset.partitions_def)
    names = RecallTranslator()
    for key in keys:
        shown, gate = key.to_user_string(), names.gate_key(key).to_user_string()
        if key not in found:
            raise ValueError(f"RecallComponent gates {shown}, but no component of this project defines it")
        if names.gate_key(key) not in {d.asset_key for d in found[key][0].deps}:
            raise ValueError(f"{shown} does not depend on its gate {gate}: add \"{gate}\" to the deps of its "
                             "asset decorator, or Dagster would train it whatever the gate says")
    return [found[key] for key in keys]
