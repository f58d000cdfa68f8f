"""Per registry model: a training asset that registers a candidate, and a promotion asset that moves the alias.

The demo's training is an ordinary Dagster asset, written as a team would
write it; :func:`recall_dagster.defs.retrain_gate` puts Recall's retrain gate
in front of it and :func:`recall_dagster.defs.metric_gate` a blocking check on
it, so a regressed candidate is never promoted, through the public API, as for
any team.

Each model is trained in an MLflow run of its own, in its own experiment, so
that a version's run holds only what trained it. The asset tags that run with
its Dagster run (``dagster_run_id``, the tag dagster-mlflow's resource writes
for teams that train through it) and its asset key: Recall reads the tag to name
the Dagster run behind every version.
"""

from typing import Any

from dagster import AssetExecutionContext, AssetKey, AssetsDefinition, MaterializeResult, asset
from dagster_dbt import get_asset_key_for_model

from ml_models.query import build_training_query
from ml_models.registry import FeatureRegistry, ModelSpec
from recall_dagster.defs import RecallResource
from recall_dagster.run_tags import DAGSTER_RUN_TAG
from ml_models.tracking import promote_version
from recall_dagster.graph import ALIAS_READ_LIMITS
from recall_dagster.mlflow_registry import mlflow_client
from seed.stack.tracking import ensure_tracking_server
from seed.injuries import training_registry
from seed.lifecycle import EstateState, train_models

GROUP = "training"
ASSET_TAG = "dagster_asset_key"


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
        required_resource_keys={"recall"},
    )
    def train(context: AssetExecutionContext) -> MaterializeResult:
        tags = {DAGSTER_RUN_TAG: context.run.run_id, ASSET_TAG: context.asset_key.to_user_string()}
        return MaterializeResult(metadata=_train(context.resources.recall, spec, tags))

    return train


def promotion_asset(spec: ModelSpec) -> AssetsDefinition:
    """The alias moves to the version the training registered, and the deployments with it."""

    @asset(key=promotion_key(spec), deps=[training_key(spec)], group_name=GROUP, kinds={"mlflow"},
           description=f"Moves {spec.registered_name}'s {spec.alias} alias to the version just trained.")
    def promote(recall: RecallResource) -> MaterializeResult:
        client = mlflow_client(ensure_tracking_server(recall.settings()), ALIAS_READ_LIMITS)
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
