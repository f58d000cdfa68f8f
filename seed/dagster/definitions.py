"""The demo estate's code location: raw load, dbt, gated training and the DataHub ingestion.

Built only on Recall's public API (:mod:`recall_dagster.defs`), as any team's
location would be: its training assets are ordinary assets that register a
candidate, :func:`~recall_dagster.defs.retrain_gate` puts Recall's retrain gate
in front of each, :func:`~recall_dagster.defs.metric_gate` a blocking check on
each, and a promotion asset behind it moves the alias only when that check passes. DataHub's own Dagster
sensor carries each run into the graph (:mod:`seed.dagster.datahub_sensor`). Recall's scans, reactions and incidents live in the ``recall`` code
location next to it (``workspace.yaml``).

Built by a function rather than at import: the dbt assets need a manifest
under ``RECALL_HOME``, and tests build their own definitions on a private home.
"""

from dagster import (
    AssetSelection,
    DefaultSensorStatus,
    Definitions,
    ScheduleDefinition,
    define_asset_job,
    definitions,
    in_process_executor,
)

from ml_models.registry import load_registry
from recall_dagster.defs import RecallResource, metric_gate, recall_definitions, retrain_gate
from recall_dagster.settings import Settings
from seed.dagster.datahub_sensor import location_datahub_sensor
from seed.dagster.feast import GROUP as FEAST_GROUP
from seed.dagster.feast import feast_assets
from seed.dagster.ingest import INGEST_KEY, datahub_metadata_asset
from seed.dagster.training import GROUP as TRAINING_GROUP
from seed.dagster.training import promotion_asset, training_asset, training_key
from seed.dagster.warehouse import GROUP as WAREHOUSE_GROUP
from seed.dagster.warehouse import dbt_cli, dbt_project, raw_layer, warehouse_dbt_assets


def build_definitions(settings: Settings | None = None, with_recall: bool = False) -> Definitions:
    """The demo's definitions on ``settings`` (fixed values), or on the environment when None.

    ``with_recall`` merges Recall's own definitions in, as a team that keeps one
    code location would (in-process tests run the whole loop this way).
    """
    resource = RecallResource.from_env() if settings is None else RecallResource.from_settings(settings)
    estate = settings or Settings.from_env()
    registry = load_registry()
    dbt = warehouse_dbt_assets(dbt_project(estate))
    feast = feast_assets(registry, dbt)
    training = [training_asset(spec, registry, dbt) for spec in registry.models]
    gated = [a for spec, asset in zip(registry.models, training) for a in retrain_gate(asset, spec.registered_name)]
    promotions = [promotion_asset(spec) for spec in registry.models]
    metric_gates = [metric_gate(training_key(spec), spec.registered_name) for spec in registry.models]
    dbt_build = define_asset_job(
        "dbt_build", AssetSelection.groups(WAREHOUSE_GROUP, FEAST_GROUP) | AssetSelection.assets(INGEST_KEY),
        description="dbt build with its tests, source freshness and catalog; Feast serves the marts; "
                    "then the DataHub ingestion.",
    )
    retrain = define_asset_job(
        "retrain_models", AssetSelection.groups(TRAINING_GROUP) | AssetSelection.assets(INGEST_KEY),
        description="Retrain every model behind Recall's gate, promote what passes its metric gate, then ingest.",
    )
    demo = Definitions(
        assets=[raw_layer, dbt, feast, *gated, *promotions, datahub_metadata_asset([*promotions, feast])],
        asset_checks=metric_gates,
        jobs=[dbt_build, retrain],
        schedules=[ScheduleDefinition(
            name="daily_dbt_build", job=dbt_build, cron_schedule="0 5 * * *", execution_timezone="UTC",
            description="Builds and tests the warehouse with dbt every morning.",
        )],
        sensors=[location_datahub_sensor(estate, registry, dbt, feast)],
        resources={"recall": resource, "dbt": dbt_cli()},
        executor=in_process_executor,
    )
    if not with_recall:
        return demo
    return Definitions.merge(demo, recall_definitions(resource, dbt=dbt, default_status=DefaultSensorStatus.RUNNING))


@definitions
def defs() -> Definitions:
    """Loaded lazily by Dagster's tools."""
    return build_definitions()
