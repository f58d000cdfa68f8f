"""Everything Dagster shows for Recall, assembled from the modules beside this one.

Built by a function rather than at import: the dbt assets need a manifest
under ``RECALL_HOME``, and tests build their own definitions on a private home.
Nothing here starts a service; resources start the warehouse when a run needs it.
"""

from dagster import Definitions, in_process_executor

from ml_models.registry import load_registry
from recall_dagster.defs import automation
from recall_dagster.defs.incidents import blind_window, data_incidents
from recall_dagster.defs.resources import RecallResource
from recall_dagster.defs.scan import (
    datahub_metadata_asset,
    datahub_writeback,
    model_closures,
    risk_findings,
    risk_scores,
)
from recall_dagster.defs.sensors import dbt_test_failure_sensor, mlflow_new_versions
from recall_dagster.defs.training import training_asset, training_key
from recall_dagster.defs.warehouse import dbt_cli, dbt_project, raw_layer, warehouse_dbt_assets
from recall_dagster.settings import Settings


def build_definitions(settings: Settings | None = None) -> Definitions:
    """Recall's Dagster definitions on ``settings`` (fixed values), or on the environment when None.

    Runs use the in-process executor: one process per run keeps a run's steps
    from each re-importing dbt, MLflow and DataHub on a small machine, and the
    run launcher (instance configuration, not code) decides where that process runs.
    """
    recall = RecallResource.from_env() if settings is None else RecallResource.from_settings(settings)
    registry = load_registry()
    dbt = warehouse_dbt_assets(dbt_project(settings or Settings.from_env()))
    training = [training_asset(spec, registry, dbt) for spec in registry.models]
    return Definitions(
        assets=[
            raw_layer, dbt, *training, datahub_metadata_asset(dbt, training),
            model_closures, risk_findings, risk_scores, datahub_writeback, data_incidents, blind_window,
        ],
        jobs=automation.JOBS,
        schedules=automation.SCHEDULES,
        sensors=[
            dbt_test_failure_sensor(dbt, {training_key(spec): spec.registered_name for spec in registry.models}),
            mlflow_new_versions,
        ],
        resources={"recall": recall, "dbt": dbt_cli()},
        executor=in_process_executor,
    )
