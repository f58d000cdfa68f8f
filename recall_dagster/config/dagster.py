"""The ``dagster:`` section of ``recall.yaml``: what the ``recall`` code location schedules and watches."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DagsterConfig:
    scan_after: tuple[str, ...]  # asset keys as "a/b"
    mlflow_models: tuple[str, ...]
    sensor_interval_seconds: int
    nightly_scan_cron: str
    scan_shards: int = 1  # > 1: the scan runs as that many partitions of shard_scans, then merges
    dbt_recipe: str | None = None  # the dbt recipe the dbt_metadata asset runs after the team's dbt assets
