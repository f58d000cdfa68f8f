"""One asset per registry model that trains, logs and registers it in MLflow, behind Recall's gate.

The demo's training is an ordinary Dagster asset, written as a team would
write it; :func:`recall_dagster.defs.retrain_gate` puts Recall's blocking gate
in front of it through the public API, as it would for any team.

dagster-mlflow is not used: its resource opens one fluent MLflow run per
Dagster run and sets a process-global tracking URI, while ``train_model``
records each model in its own run through an explicit client. An umbrella run
would appear in DataHub as a training run that trained nothing.
"""

from typing import Any

from dagster import AssetKey, AssetsDefinition, MaterializeResult, asset
from dagster_dbt import get_asset_key_for_model

from ml_models.query import build_training_query
from ml_models.registry import FeatureRegistry, ModelSpec
from recall_dagster.defs import RecallResource
from recall_dagster.progress import Progress
from seed.lifecycle import EstateState, train_and_deploy
from seed.stack.warehouse import ensure_warehouse

GROUP = "training"


def training_key(spec: ModelSpec) -> AssetKey:
    return AssetKey(["ml", spec.name])


def training_asset(spec: ModelSpec, registry: FeatureRegistry, dbt: AssetsDefinition) -> AssetsDefinition:
    """The model's training, downstream of the dbt models its training query reads."""
    reads = build_training_query(spec, registry).reads

    @asset(
        key=training_key(spec),
        deps=[get_asset_key_for_model([dbt], read.table.name) for read in reads],
        group_name=GROUP,
        description=spec.description,
        kinds={"mlflow", "scikitlearn"},
        metadata={"registered_name": spec.registered_name, "alias": spec.alias},
    )
    def train(recall: RecallResource) -> MaterializeResult:
        return MaterializeResult(metadata=_train(recall, spec, registry))

    return train


def _train(recall: RecallResource, spec: ModelSpec, registry: FeatureRegistry) -> dict[str, Any]:
    """Train through the estate's own step, then read back what MLflow recorded for the asset's metadata."""
    settings = recall.settings()
    version = train_and_deploy(
        settings, ensure_warehouse(settings), registry, EstateState(settings), Progress(quiet=True), models=(spec.name,)
    )[spec.name]
    client = recall.mlflow_client()
    run_id = client.get_model_version(spec.registered_name, str(version)).run_id
    metrics = client.get_run(run_id).data.metrics
    return {
        "registered_name": spec.registered_name,
        "version": version,
        "alias": spec.alias,
        "mlflow_run_id": run_id,
        **{f"metric.{k}": float(v) for k, v in sorted(metrics.items()) if not k.startswith("table_rows.")},
    }
