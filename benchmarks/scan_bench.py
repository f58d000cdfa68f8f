"""How long a scan takes on a demo-sized estate once the graph is warm.

Builds a synthetic estate (``synthetic_estate.py``: datasets in raw -> marts
chains, features, feature tables, training runs, deployments, assertions) in a
temporary DataHub Lite file, then times each stage of a scan against a baseline
measured in the same run: reading every aspect of every entity once, the floor
any scan must pay.

    .venv/bin/python benchmarks/scan_bench.py [--scale N] [--repeat N]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Callable

from synthetic_estate import NOW, Shape, entities, estate, read_everything

from recall_dagster.estate.resolve import resolve_closures
from recall_dagster.graph import LiteGraph
from recall_dagster.kept.baselines import MemoryStateStore
from recall_dagster.config.load import load
from recall_dagster.scan import judged, run_scan
from recall_dagster.results import score_models


def demo_shape(scale: int) -> Shape:
    """``scale`` copies of a demo-sized estate: 3 models, 12 features, 12 datasets each."""
    return Shape(
        models=3 * scale, models_per_family=3, tables_per_family=4, features_per_table=3, features_per_model=4,
        depth=3, operations=1, assertion_runs=1,
    )


def timed(fn: Callable[[], object], repeat: int) -> float:
    """Median wall time in milliseconds."""
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=1, help="copies of the demo-sized estate")
    parser.add_argument("--repeat", type=int, default=5, help="runs per measurement (median reported)")
    args = parser.parse_args()
    config = load().scan
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        writer = LiteGraph(db)
        report = writer.emit_mcps(estate(demo_shape(args.scale)))
        writer.close()
        graph = LiteGraph(db, read_only=True)
        try:
            everything = entities(graph)
            scan = lambda: run_scan(graph, config, MemoryStateStore(), scanned_at_ms=NOW)  # noqa: E731
            cold = timed(scan, 1)
            baseline = timed(lambda: read_everything(graph, everything, config.resolve.history_limit), args.repeat)
            closures = resolve_closures(graph, config.resolve)
            detection = judged(closures, config, {}, at_ms=NOW)
            rows = [
                ("baseline: read every aspect once", baseline),
                ("scan, cold", cold),
                ("resolve closures", timed(lambda: resolve_closures(graph, config.resolve), args.repeat)),
                ("run detectors", timed(lambda: judged(closures, config, {}, at_ms=NOW), args.repeat)),
                ("score", timed(lambda: score_models(closures, detection, config, at_ms=NOW), args.repeat)),
                ("scan, warm (end to end)", timed(scan, args.repeat)),
            ]
        finally:
            graph.close()
    print(f"estate: {report.written} aspects, {len(everything)} entities, {len(closures)} production models")
    for label, ms in rows:
        print(f"{label:36s} {ms:8.1f} ms  {ms / baseline:6.1f}x baseline")


if __name__ == "__main__":
    main()
