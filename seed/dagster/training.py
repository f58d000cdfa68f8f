"""Per registry model: a training asset that registers a candidate, and a promotion asset that moves the alias.

The demo's training is an ordinary Dagster asset, written as a team would
write it; :func:`recall_dagster.defs.retrain_gate` puts Recall's blocking gate
in front of it and :func:`recall_dagster.defs.metric_gate` a blocking check on
it, so a regressed candidate is never promoted, through the public API, as for
any team.

MLflow is reached through dagster-mlflow's resource, as a Dagster team
would: it opens one MLflow run per Dagster run (in the ``demo_estate``
experiment, tagged ``dagster_run_id``) and the hook ends it with the job. Each
model is still trained in a run of its own, in its own experiment, so that a
version's run holds only what trained it; that run is a child of the Dagster
run's (``mlflow.parentRunId``) and carries the same ``dagster_run_id``, which
Recall reads to name the Dagster run behind every version.
"""

from typing import Any, Iterator

from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    InitResourceContext,
    MaterializeResult,
    ResourceDefinition,
    asset,
)
from dagster_dbt import get_asset_key_for_model
from dagster_mlflow import mlflow_tracking
from mlflow.utils.mlflow_tags import MLFLOW_PARENT_RUN_ID

from ml_models.query import build_training_query
from ml_models.registry import FeatureRegistry, ModelSpec
from recall_dagster.defs import RecallResource
from recall_dagster.run_tags import DAGSTER_RUN_TAG
from recall_dagster.settings import Settings
from ml_models.tracking import mlflow_process_state, promote_version
from seed.injuries import training_registry
from seed.lifecycle import EstateState, train_models

GROUP = "training"
MLFLOW_EXPERIMENT = "demo_estate"  # where dagster-mlflow keeps the run of each Dagster run
ASSET_TAG = "dagster_asset_key"


def mlflow_resource(settings: Settings) -> ResourceDefinition:
    """dagster-mlflow's resource on the estate's tracking store, which leaves the process's MLflow settings as it
    found them when the run ends: an in-process run (``seed build``, a test) would otherwise point every later
    MLflow client of that process, and ``Settings.from_env``, at this estate's store."""
    restoring = ResourceDefinition(resource_fn=_restoring_mlflow_tracking, config_schema=mlflow_tracking.config_schema,
                                   description=mlflow_tracking.description)
    return restoring.configured({"experiment_name": MLFLOW_EXPERIMENT, "mlflow_tracking_uri": settings.mlflow_uri})


def _restoring_mlflow_tracking(context: InitResourceContext) -> Iterator[Any]:
    with mlflow_process_state():
        yield from mlflow_tracking.resource_fn(context)


def training_key(spec: ModelSpec) -> AssetKey:
    return AssetKey(["ml", spec.name])


def promotion_key(spec: ModelSpec) -> AssetKey:
    return AssetKey(["ml", f"{spec.name}_promotion"])


def training_asset(spec: ModelSpec, registry: FeatureRegistry, dbt: AssetsDefinition) -> AssetsDefinition:
    """The model's training, downstream of the dbt models behind its labels and features (training stages its
    Feast views from them, not from the served repository: see :mod:`ml_models.historical`)."""
    reads = build_training_query(spec, registry).reads

    @asset(
        key=training_key(spec),
        deps=[get_asset_key_for_model([dbt], read.table.name) for read in reads],
        group_name=GROUP,
        description=spec.description,
        kinds={"feast", "mlflow", "scikitlearn"},
        metadata={"registered_name": spec.registered_name, "alias": spec.alias},
        required_resource_keys={"recall", "mlflow"},
    )
    def train(context: AssetExecutionContext) -> MaterializeResult:
        tags = {
            DAGSTER_RUN_TAG: context.run.run_id,
            ASSET_TAG: context.asset_key.to_user_string(),
            MLFLOW_PARENT_RUN_ID: context.resources.mlflow.active_run().info.run_id,
        }
        return MaterializeResult(metadata=_train(context.resources.recall, spec, tags))

    return train


def promotion_asset(spec: ModelSpec) -> AssetsDefinition:
    """The alias moves to the version the training registered, and the deployments with it."""

    @asset(key=promotion_key(spec), deps=[training_key(spec)], group_name=GROUP, kinds={"mlflow"},
           description=f"Moves {spec.registered_name}'s {spec.alias} alias to the version just trained.")
    def promote(recall: RecallResource) -> MaterializeResult:
        client = recall.mlflow_client()
        version = max(int(v.version) for v in client.search_model_versions(f"name = '{spec.registered_name}'"))
        promote_version(client, spec, version)
        state = EstateState(recall.settings())
        for deployment in spec.deployments:
            state.deployed[deployment.name] = version
        state.save()
        return MaterializeResult(metadata={"registered_name": spec.registered_name, "version": version,
                                           "alias": spec.alias})

    return promote


def _train(recall: RecallResource, spec: ModelSpec, tags: dict[str, str]) -> dict[str, Any]:
    """Train through the estate's own step (the training registry in force, a scenario's code change included),
    registering a candidate; then read back what MLflow recorded for the asset's metadata."""
    settings = recall.settings()
    version = train_models(settings, training_registry(settings), (spec.name,), tags)[spec.name]
    client = recall.mlflow_client()
    run_id = client.get_model_version(spec.registered_name, str(version)).run_id
    metrics = client.get_run(run_id).data.metrics
    return {
        "registered_name": spec.registered_name,
        "version": version,
        "mlflow_run_id": run_id,
        **{f"metric.{k}": float(v) for k, v in sorted(metrics.items()) if not k.startswith("table_rows.")},
    }
