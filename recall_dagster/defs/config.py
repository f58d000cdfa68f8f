"""The ``dagster:`` section of ``recall.yaml``: what the ``recall`` code location schedules and watches."""

from __future__ import annotations

import os
from dataclasses import dataclass

from recall_dagster.detect.config import _Section
from recall_dagster.errors import ConfigError
from recall_dagster.config.load import load_yaml_config


@dataclass(frozen=True)
class DagsterConfig:
    scan_after: tuple[str, ...]  # asset keys as "a/b"
    mlflow_models: tuple[str, ...]
    sensor_interval_seconds: int
    nightly_scan_cron: str
    scan_shards: int = 1  # > 1: the scan runs as that many partitions of shard_scans, then merges


def load_dagster_config(path: str | os.PathLike[str] | None = None) -> DagsterConfig:
    """The shipped section with ``path``'s laid over it, every mistake a ConfigError naming the key."""
    data, source = load_yaml_config(path)
    if "dagster" not in data:
        raise ConfigError(f"{source}: the dagster section is missing")
    s = _Section(data["dagster"], "dagster", source)
    return DagsterConfig(
        scan_after=s.texts("scan_after"),
        mlflow_models=s.texts("mlflow_models"),
        sensor_interval_seconds=s.integer("sensor_interval_seconds", minimum=30),
        nightly_scan_cron=s.text("nightly_scan_cron") or "",
        scan_shards=s.integer("scan_shards", minimum=1),
    )
