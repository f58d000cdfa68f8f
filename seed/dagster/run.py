"""The estate's own trainings as Dagster runs of the demo location's training assets, on the instance under
RECALL_HOME: every MLflow run they open carries its Dagster run, ``recall dagster`` shows the runs, and the
location's DataHub sensor (DataHub's Dagster plugin) carries each into the graph, as the daemon would.

Only the training assets are materialized, not their retrain gates: the
lifecycle writes the estate's history, including a scenario's retrain on bad
data that a team without Recall would have run.
"""

from dataclasses import dataclass
from typing import Mapping

from dagster import DagsterInstance, Definitions, build_sensor_context, define_asset_job

from ml_models.registry import load_registry
from recall_dagster.cli.dagster_cmd import dagster_home
from recall_dagster.defs import RecallResource
from recall_dagster.settings import Settings
from seed.dagster.datahub_sensor import SENSOR, location_datahub_sensor
from seed.dagster.feast import feast_assets
from seed.dagster.training import training_asset, training_key
from seed.dagster.warehouse import dbt_project, warehouse_dbt_assets


JOB = "estate_training"  # the Dagster job


@dataclass(frozen=True)
class TrainingRun:
    run_id: str  # the Dagster run
    versions: Mapping[str, int]  # model -> the version it registered
    instance: str  # DAGSTER_HOME the run is recorded in


def train_in_dagster(settings: Settings, models: tuple[str, ...]) -> TrainingRun:
    """One Dagster run training ``models``; a failing step fails here, with Dagster's own error."""
    registry = load_registry()
    dbt = warehouse_dbt_assets(dbt_project(settings))
    specs = [spec for spec in registry.models if spec.name in models]
    home = dagster_home(settings)
    defs = Definitions(
        assets=[training_asset(spec, registry, dbt) for spec in specs],
        jobs=[define_asset_job(JOB)],
        sensors=[location_datahub_sensor(settings, registry, dbt, feast_assets(registry, dbt))],
        resources={"recall": RecallResource.from_settings(settings)},
    )
    with DagsterInstance.from_config(str(home)) as instance:
        before = _tick(defs, instance, None)
        result = defs.resolve_job_def(JOB).execute_in_process(instance=instance)
        _tick(defs, instance, before)
    registered = {e.asset_key: e.materialization.metadata["version"].value
                  for e in result.get_asset_materialization_events()}
    return TrainingRun(result.run_id, {spec.name: int(registered[training_key(spec)]) for spec in specs}, str(home))


def _tick(defs: Definitions, instance: DagsterInstance, cursor: str | None) -> str | None:
    """One evaluation of the DataHub sensor over the instance's runs after ``cursor`` (None: from the newest
    run on), returning its new cursor. The daemon would not pick these runs up itself: they are launched in
    process, by no code location it serves."""
    with build_sensor_context(instance=instance, cursor=cursor, definitions=defs) as context:
        defs.resolve_sensor_def(SENSOR)(context)
        return context.cursor
