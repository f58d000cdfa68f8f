"""Whether shard partitions really run side by side: four launched at once against the four one after another.

Writes a synthetic estate (``synthetic_estate.py``) into a DataHub Lite file,
then runs the four partitions of ``shard_scans`` as a run launcher does, each
its own ``dagster asset materialize`` process on one RECALL_HOME and one Dagster
instance: first one after another on a fresh home (the baseline, measured in
the same run), then all four at once on another fresh home, with
``RECALL_LOCK_WAIT_SECONDS=0`` so a run that met another's lock would fail
rather than wait.  Prints each wall time and the ratio; on two cores the floor
is about 0.5, one at a time is 1.0.

    .venv/bin/python benchmarks/shard_bench.py [--models N]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path

from dagster import DagsterInstance
from synthetic_estate import NOW, Shape, estate

from recall_dagster.graph import LiteGraph
from recall_dagster.instants import iso_instant
from recall_dagster.settings import Settings
from recall_dagster.shard_parts import ShardParts

SHARDS = 4
DAGSTER = str(Path(sys.executable).with_name("dagster"))


def home_for(root: Path, graph: Path) -> dict[str, str]:
    """A fresh RECALL_HOME cut into four shards, and the environment of a run on it."""
    home = root / "home"
    home.mkdir(parents=True)
    (home / "recall.yaml").write_text(f"dagster:\n  scan_shards: {SHARDS}\n")
    (root / "dagster").mkdir()
    DagsterInstance.local_temp(str(root / "dagster")).dispose()  # the deployment's instance, set up once
    paths = [str(Path(__file__).resolve().parent.parent), os.environ.get("PYTHONPATH", "")]  # this checkout's code
    return {**os.environ, "RECALL_HOME": str(home), "RECALL_GRAPH": str(graph), "RECALL_LOCK_WAIT_SECONDS": "0",
            "DAGSTER_HOME": str(root / "dagster"), "PYTHONPATH": os.pathsep.join(p for p in paths if p)}


def launch(env: dict[str, str], shard: int) -> subprocess.Popen[str]:
    config = json.dumps({"ops": {"shard_scans": {"config": {"scanned_at": iso_instant(NOW)}}}})
    return subprocess.Popen(
        [DAGSTER, "asset", "materialize", "-m", "recall_dagster.definitions", "--select", "shard_scans",
         "--partition", f"{shard}-of-{SHARDS}", "--config-json", config],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )


def finished(runs: list[subprocess.Popen[str]]) -> None:
    """Wait for every run; one that failed (or met a lock) stops the benchmark with its output."""
    for run in runs:
        output = run.communicate()[0]
        if run.returncode != 0 or "is busy" in output:
            sys.exit(f"a shard run failed:\n{output[-3000:]}")


def timed_runs(root: Path, graph: Path, at_once: bool) -> float:
    """Wall seconds for the four partitions on a fresh home, launched together or one after another."""
    env = home_for(root, graph)
    start = time.perf_counter()
    if at_once:
        finished([launch(env, i) for i in range(SHARDS)])
    else:
        for i in range(SHARDS):
            finished([launch(env, i)])
    seconds = time.perf_counter() - start
    parts = ShardParts(Settings.under(Path(env["RECALL_HOME"])).state_dir, str(graph))
    if set(parts.instants(SHARDS).values()) != {NOW}:
        sys.exit("the shards did not all record their part of one instant")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=1000, help="production models in the synthetic estate")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        graph = Path(tmp) / "estate.db"
        with closing(LiteGraph(graph)) as writer:
            written = writer.emit_mcps(estate(Shape(models=args.models))).written
        print(f"estate: {written} aspects, {args.models} production models, {SHARDS} shards, "
              f"{os.cpu_count()} cores", flush=True)
        one_by_one = timed_runs(Path(tmp) / "one-by-one", graph, at_once=False)
        print(f"four one after another (baseline) {one_by_one:7.1f} s", flush=True)
        together = timed_runs(Path(tmp) / "at-once", graph, at_once=True)
        print(f"four launched at once             {together:7.1f} s", flush=True)
    print(f"ratio at once / one after another  {together / one_by_one:7.2f}  "
          f"({one_by_one / together:.2f}x faster; none waited on a lock)")


if __name__ == "__main__":
    main()
