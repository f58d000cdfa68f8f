"""The scan cut into shards that separate runs scan at once, then merged into one scan of the estate.

With ``dagster.scan_shards: N`` (N > 1) in ``recall.yaml``, ``shard_scans``
is an asset of N static partitions (``0-of-N`` ...): each partition reads the
closures of the models whose registered model hashes to it and runs the
detectors that need one closure (:meth:`recall_dagster.scan.Pipeline.shard`).
A run launcher such as dagster-k8s runs the partitions side by side: none
takes a lock on ``RECALL_HOME``, each writing its own snapshot and part and its
baselines under the file's own lock, so four at once never wait on one another.
Their parts meet in ``RECALL_HOME`` (:class:`ShardParts`); once every shard holds a
part of one instant, ``shard_merge`` launches the scan job, whose
``model_closures`` gathers them, and the blast radius, scores and write-back
run once over the whole estate, exactly as one unsharded scan.

Every part of one scan must judge freshness at one instant: the nightly
schedule gives its tick's time to every shard, a backfill of all partitions
gives its own start, and a single partition launched by hand its run's start.
"""

from typing import Sequence

from dagster import (
    DefaultScheduleStatus,
    DefaultSensorStatus,
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    Config,
    MaterializeResult,
    RunRequest,
    ScheduleDefinition,
    ScheduleEvaluationContext,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    StaticPartitionsDefinition,
    define_asset_job,
    schedule,
    sensor,
)
from pydantic import Field

from recall_dagster.defs._compat import BACKFILL_ID_TAG, UnresolvedAssetJobDefinition
from recall_dagster.defs.resources import RecallResource
from recall_dagster.estate.shards import Shard
from recall_dagster.clock import clock_ms
from recall_dagster.instants import datetime_ms, iso_instant, parse_instant, seconds_ms
from recall_dagster.shard_parts import ShardParts
from recall_dagster.defs.translator import RecallTranslator, op_name, recall_asset

SHARD_ASSET = "shard_scans"
Job = UnresolvedAssetJobDefinition


class ShardScanConfig(Config):
    include_all: bool = Field(default=False, description="Every model, not only production ones (recall scan --all).")
    full: bool = Field(
        default=False, description="Read every closure, not only those a change since the last scan reaches (--full)."
    )
    scanned_at: str = Field(
        default="",
        description="The instant every shard judges freshness at (ISO-8601); empty: the backfill's start, or now.",
    )


def shard_partitions(count: int) -> StaticPartitionsDefinition:
    return StaticPartitionsDefinition([s.key for s in Shard.all(count)])


def _instant(context: AssetExecutionContext, config: ShardScanConfig) -> int:
    """The instant this shard's part is of: the one the config gives, else its backfill's start, so the shards
    of one backfill always merge, else now."""
    if config.scanned_at:
        return datetime_ms(parse_instant(config.scanned_at, "scanned_at"))
    backfill_id = context.run.tags.get(BACKFILL_ID_TAG)
    backfill = context.instance.get_backfill(backfill_id) if backfill_id else None
    return seconds_ms(backfill.backfill_timestamp) if backfill is not None else clock_ms()


def shard_scans_asset(count: int, deps: Sequence[AssetKey | str] = (),
                      translator: RecallTranslator | None = None) -> AssetsDefinition:
    """``shard_scans``: one partition per shard of ``count``, each scanning its share of the estate."""

    @recall_asset(translator or RecallTranslator(), SHARD_ASSET, deps=list(deps), partitions_def=shard_partitions(count))
    def shard_scans(context: AssetExecutionContext, config: ShardScanConfig, recall: RecallResource) -> MaterializeResult:
        """This shard's closures and what the detectors that need one closure found in them, kept in
        RECALL_HOME until ``model_closures`` merges every shard."""
        shard, settings = Shard.parse(context.partition_key), recall.settings()
        at = _instant(context, config)
        with recall.open_graph() as graph:
            part = recall.pipeline().shard(graph, scanned_at_ms=at, shard=shard, include_all=config.include_all,
                                           full=config.full)
            ShardParts(settings.state_dir, settings.graph, config.include_all).save(part)
        findings = sum(len(fs) for fs in part.found.values())
        return MaterializeResult(metadata={
            "summary": f"shard {context.partition_key}: {len(part.closures)} closure(s) read, {findings} finding(s)",
            "scanned_at": iso_instant(at),
            "models": len(part.closures),
            "findings": findings,
            **({"resolve": part.rescan.summary()} if part.rescan is not None else {}),
        })

    return shard_scans


def shard_job(translator: RecallTranslator | None = None) -> Job:
    t = translator or RecallTranslator()
    return define_asset_job(
        t.job_name("recall_scan_shards"), [t.asset_key(SHARD_ASSET)],
        description="Scan one shard of the estate (one partition per run).",
    )


def _shard_config(scanned_at: str, translator: RecallTranslator) -> dict:
    return {"ops": {op_name(translator, SHARD_ASSET): {"config": ShardScanConfig(scanned_at=scanned_at).model_dump()}}}


def sharded_nightly_scan(job: Job, count: int, cron: str = "0 2 * * *",
                         default_status: DefaultSensorStatus = DefaultSensorStatus.STOPPED,
                         translator: RecallTranslator | None = None) -> ScheduleDefinition:
    """Every shard at the tick's instant, one run each; ``shard_merge`` takes it from there."""
    t = translator or RecallTranslator()

    @schedule(name=t.schedule_name("nightly_scan"), job=job, cron_schedule=cron, execution_timezone="UTC",
              default_status=DefaultScheduleStatus(default_status.value),
              description="Scans every shard of the estate at the tick's instant, one run each.")
    def nightly_scan(context: ScheduleEvaluationContext) -> list[RunRequest]:
        at = iso_instant(datetime_ms(context.scheduled_execution_time))
        return [RunRequest(run_key=f"{s.key}@{at}", partition_key=s.key, run_config=_shard_config(at, t))
                for s in Shard.all(count)]

    return nightly_scan


def shard_merge_sensor(job: Job, count: int, interval_s: int = 60,
                       default_status: DefaultSensorStatus = DefaultSensorStatus.STOPPED,
                       translator: RecallTranslator | None = None) -> SensorDefinition:
    """Launch the scan job once every shard holds a part of one instant newer than the last merged; the
    cursor is that instant, so each set of parts is merged once."""

    @sensor(name=(translator or RecallTranslator()).sensor_name("shard_merge"), job=job,
            minimum_interval_seconds=interval_s, default_status=default_status,
            description="Merges the shards' parts into one scan once every shard holds a part of one instant.")
    def shard_merge(context: SensorEvaluationContext, recall: RecallResource) -> SensorResult:
        settings = recall.settings()
        instants = ShardParts(settings.state_dir, settings.graph).instants(count)
        merged = int(context.cursor) if context.cursor else None
        missing = [key for key, at in instants.items() if at is None]
        if missing:
            return SensorResult(skip_reason=f"waiting for shard {', '.join(missing)}")
        distinct = sorted({at for at in instants.values() if at is not None})
        if len(distinct) > 1:
            behind = [key for key, at in instants.items() if at != distinct[-1]]
            return SensorResult(skip_reason=f"waiting for shard {', '.join(behind)} to scan at "
                                            f"{iso_instant(distinct[-1])}")
        at = distinct[0]
        if merged is not None and at <= merged:
            return SensorResult(skip_reason=f"the shards of {iso_instant(at)} are merged")
        return SensorResult(run_requests=[RunRequest(run_key=f"merge@{iso_instant(at)}",
                                                     tags={"recall/trigger": "shard_merge"})], cursor=str(at))

    return shard_merge
