"""Recall's Dagster integration: the public API a code location builds on.

In the style of ``dagster_dbt``: factories that return assets, sensors, jobs
and schedules, one resource, and a translator where naming must be decided.
Either run the ``recall`` code location as it is (:mod:`recall_dagster.definitions`,
configured by ``recall.yaml`` and the environment), or merge these pieces into
a team's own location next to its dbt and training assets::

    from dagster import Definitions
    from recall_dagster.defs import RecallResource, recall_definitions, retrain_gate

    defs = Definitions.merge(
        Definitions(
            assets=[*retrain_gate(train_churn, "churn_model")],
            asset_checks=[metric_gate(train_churn.key, "churn_model")],  # blocks the promotion downstream
            resources={"recall": RecallResource.from_env()},
        ),
        recall_definitions(),
    )

Nothing here holds logic: each definition calls the same function as the ``recall`` CLI.
"""



from pathlib import Path

from dagster import AssetKey, AssetsDefinition, DefaultSensorStatus, Definitions, JobDefinition

from recall_dagster.defs._compat import UnresolvedAssetJobDefinition
from recall_dagster.defs.automation import nightly_scan, rescan_job, scan_job
from recall_dagster.config.dagster import DagsterConfig
from recall_dagster.config.load import load
from recall_dagster.defs.dbt_metadata import dbt_metadata_asset
from recall_dagster.defs.retrain_gate import retrain_gate
from recall_dagster.defs.incidents import recall_incident_assets
from recall_dagster.defs.metric_gate import metric_gate
from recall_dagster.defs.resources import RecallResource
from recall_dagster.defs.rollback import RollbackConfig, rollback_job, rollback_run_config
from recall_dagster.defs.scan import ScanRunConfig, recall_scan_assets, scan_run_config
from recall_dagster.defs.shards import shard_job, shard_merge_sensor, sharded_nightly_scan
from recall_dagster.defs.sensors import datahub_assertion_sensor, dbt_test_failure_sensor, mlflow_sensor
from recall_dagster.defs.translator import RecallTranslator


def recall_definitions(
    recall: RecallResource | None = None,
    config: DagsterConfig | None = None,
    dbt: AssetsDefinition | None = None,
    translator: RecallTranslator | None = None,
    default_status: DefaultSensorStatus = DefaultSensorStatus.STOPPED,
) -> Definitions:
    """Recall's assets, jobs (the scan, the rescan, and the rollback a person launches), schedule and sensors,
    configured from ``recall.yaml`` and the environment.

    ``recall`` and ``config`` default to the environment (``RECALL_*``) and the
    ``dagster:`` section of ``recall.yaml``. Building blocks, not a takeover: no
    executor is set (a team's jobs run as its own do), every asset sits in one
    group (``recall`` unless the ``translator`` names another, so
    ``AssetSelection.groups(...)`` leaves them out of a team's jobs), the
    translator names every key, job, sensor, schedule and check, and the sensors
    and the nightly schedule start STOPPED unless ``default_status`` says
    RUNNING. Given the team's ``dbt`` assets (in the same code location), their
    failing tests launch a rescan straight from Dagster's event log as well as
    through DataHub. With a ``dagster.dbt_recipe``, a ``dbt_metadata`` asset
    (downstream of those dbt assets) ingests what dagster-dbt ran first in every
    scan, and any new test result, passing too, launches the rescan (a test
    passing again resolves its incident).
    """
    resource = recall or RecallResource.from_env()
    chosen = config or load(resource.config_file()).dagster
    t = translator or RecallTranslator()
    after = [AssetKey.from_user_string(k) for k in chosen.scan_after]
    ingests = [dbt_metadata_asset(Path(chosen.dbt_recipe), dbt, t)] if chosen.dbt_recipe else []
    first = [key for asset in ingests for key in asset.keys]
    after += first
    scan, rescan = scan_job(t, first), rescan_job(t, first)
    interval, shards = chosen.sensor_interval_seconds, chosen.scan_shards
    sensors = [datahub_assertion_sensor(rescan, interval, default_status, t),
               mlflow_sensor(rescan, chosen.mlflow_models, interval, default_status, t)]
    if dbt is not None:
        sensors.append(dbt_test_failure_sensor(dbt, rescan, t, interval, default_status, on_pass=bool(ingests)))
    jobs: list[JobDefinition | UnresolvedAssetJobDefinition] = [scan, rescan, rollback_job(t)]
    nightly = nightly_scan(scan, chosen.nightly_scan_cron, default_status, t)
    if shards > 1:  # the schedule fans out over the shards; their merge launches the scan job
        jobs.append(shards_job := shard_job(t))
        nightly = sharded_nightly_scan(shards_job, shards, chosen.nightly_scan_cron, default_status, t)
        sensors.append(shard_merge_sensor(scan, shards, interval, default_status, t))
    return Definitions(
        assets=[*ingests, *recall_scan_assets(after, shards, t), *recall_incident_assets(after, t)],
        jobs=jobs,
        schedules=[nightly],
        sensors=sensors,
        resources={"recall": resource},
    )


__all__ = [
    "DagsterConfig",
    "RecallResource",
    "RecallTranslator",
    "RollbackConfig",
    "ScanRunConfig",
    "datahub_assertion_sensor",
    "dbt_metadata_asset",
    "dbt_test_failure_sensor",
    "metric_gate",
    "mlflow_sensor",
    "nightly_scan",
    "recall_definitions",
    "recall_incident_assets",
    "recall_scan_assets",
    "rescan_job",
    "rollback_job",
    "rollback_run_config",
    "retrain_gate",
    "scan_job",
    "scan_run_config",
    "shard_job",
    "shard_merge_sensor",
    "sharded_nightly_scan",
]
