"""Jobs and the nightly schedule over Recall's own assets: the full scan and the reactions' rescan.

Each job selects assets by key, so it works in the ``recall`` code location and
in a team's own location that merged Recall's assets in alike; the translator
names the jobs, the schedule and the keys they select.
"""


from typing import Sequence

from dagster import AssetKey, AssetSelection, DefaultScheduleStatus, DefaultSensorStatus, ScheduleDefinition, define_asset_job

from recall_dagster.defs._compat import UnresolvedAssetJobDefinition
from recall_dagster.defs.shards import SHARD_ASSET
from recall_dagster.defs.translator import ASSETS, RecallTranslator

SCAN_KEYS = tuple(name for name in ASSETS if name != SHARD_ASSET)  # what one scan materializes; shards run apart


def _scan_assets(translator: RecallTranslator, first: Sequence[AssetKey]) -> AssetSelection:
    return AssetSelection.assets(*first, *(translator.asset_key(name) for name in SCAN_KEYS))


def scan_job(translator: RecallTranslator | None = None, first: Sequence[AssetKey] = ()
             ) -> UnresolvedAssetJobDefinition:
    """The full scan; ``first`` are assets of Recall's that run before it in the same job (``dbt_metadata``)."""
    t = translator or RecallTranslator()
    return define_asset_job(
        t.job_name("recall_scan"), _scan_assets(t, first),
        description="Scan every production model, write the diagnosis to DataHub, sync data incidents.",
    )


def rescan_job(translator: RecallTranslator | None = None, first: Sequence[AssetKey] = ()
               ) -> UnresolvedAssetJobDefinition:
    """What the sensors launch, with run config naming the models to scan."""
    t = translator or RecallTranslator()
    return define_asset_job(
        t.job_name("recall_rescan"), _scan_assets(t, first),
        description="Scan the models the run config names (a sensor's choice) and sync data incidents.",
    )


def nightly_scan(job: UnresolvedAssetJobDefinition, cron: str = "0 2 * * *",
                 default_status: DefaultSensorStatus = DefaultSensorStatus.STOPPED,
                 translator: RecallTranslator | None = None) -> ScheduleDefinition:
    """The nightly scan; STOPPED unless ``default_status`` says otherwise (one status for sensors and schedules)."""
    return ScheduleDefinition(name=(translator or RecallTranslator()).schedule_name("nightly_scan"), job=job,
                              cron_schedule=cron, execution_timezone="UTC",
                              default_status=DefaultScheduleStatus(default_status.value),
                              description="Scans every production model, writes the diagnosis to DataHub and "
                                          "syncs data incidents.")
