"""The ``dagster:`` section of ``recall.yaml``: what the ``recall`` code location schedules and watches."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from recall_dagster.detect.config import _Section


@dataclass(frozen=True)
class DagsterConfig:
    scan_after: tuple[str, ...]  # asset keys as "a/b"
    mlflow_models: tuple[str, ...]
    sensor_interval_seconds: int
    nightly_scan_cron: str
    scan_shards: int = 1  # > 1: the scan runs as that many partitions of shard_scans, then merges


def parse_dagster_config(data: Mapping[str, Any], source: str = "recall.yaml") -> DagsterConfig:
    s = _Section(data, "dagster", source)
    return DagsterConfig(
        scan_after=s.texts("scan_after"),
        mlflow_models=s.texts("mlflow_models"),
        sensor_interval_seconds=s.integer("sensor_interval_seconds", minimum=30),
        nightly_scan_cron=s.text("nightly_scan_cron") or "",
        scan_shards=s.integer("scan_shards", minimum=1),
    )
