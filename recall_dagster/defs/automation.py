"""Jobs and schedules: the nightly full scan, the daily dbt build, the reactions' rescan, the gated retrain.

Each job selects assets, and an asset selection brings the assets' checks
along: dbt tests run with ``dbt_build`` and each retrain gate with its retrain.
"""

from dagster import AssetSelection, ScheduleDefinition, define_asset_job

from recall_dagster.defs import incidents, scan, training, warehouse

SCAN = AssetSelection.assets(scan.model_closures, scan.risk_findings, scan.risk_scores, scan.datahub_writeback)
INGEST = AssetSelection.assets(scan.INGEST_KEY)
INCIDENTS = AssetSelection.assets(incidents.data_incidents, incidents.blind_window)

scan_job = define_asset_job(
    "recall_scan", SCAN | INCIDENTS, description="Scan every production model, sync data incidents, keep the evidence."
)
rescan_job = define_asset_job(
    "recall_rescan",
    INGEST | SCAN | INCIDENTS,
    description="Re-ingest dbt and MLflow, scan the models the run config names, and sync data incidents.",
)
dbt_build_job = define_asset_job(
    "dbt_build", AssetSelection.groups(warehouse.GROUP) | INGEST,
    description="dbt build with its tests, source freshness and catalog, then the DataHub ingestion.",
)
retrain_job = define_asset_job(
    "retrain_models", AssetSelection.groups(training.GROUP), description="Retrain every model, each behind its gate."
)

nightly_scan = ScheduleDefinition(
    name="nightly_scan", job=scan_job, cron_schedule="0 2 * * *", execution_timezone="UTC"
)
daily_dbt_build = ScheduleDefinition(
    name="daily_dbt_build", job=dbt_build_job, cron_schedule="0 5 * * *", execution_timezone="UTC"
)

JOBS = (scan_job, rescan_job, dbt_build_job, retrain_job)
SCHEDULES = (nightly_scan, daily_dbt_build)
