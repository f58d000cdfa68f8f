"""How long ``recall --help`` and ``recall gate`` take, against a bare interpreter start.

Runs each command in a fresh process a few times and reports the median wall
time: the baseline is ``python -c pass`` on the same interpreter, the floor
any Python CLI pays; ``recall`` is the installed console script (or
``recall_dagster.cli:main`` when the script is not next to the interpreter).
The listing imports no subcommand, so it should stay within a small multiple
of the baseline. ``recall gate`` judges a model of the foreign test estate
(``tests/foreign/fixtures/estate_stock.json``, loaded into a DataHub Lite file
in a scratch folder with nothing to replay): the start-up a CI step pays.
Targets (issue 35): help <= 0.5 s, gate <= 1.5 s. Prints one JSON line last.

    .venv/bin/python benchmarks/cli_startup.py [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def recall_command() -> list[str]:
    """The ``recall`` console script beside this interpreter, else the same entry point through ``-c``."""
    script = Path(sys.executable).parent / "recall"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from recall_dagster.cli import main; sys.argv[0] = 'recall'; main()"]


def timed(argv: list[str], repeat: int, env: dict[str, str] | None = None, codes: tuple[int, ...] = (0,)) -> float:
    """Median wall time in milliseconds of running ``argv`` to completion; it must exit with one of ``codes``."""
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        samples.append((time.perf_counter() - start) * 1000)
        if done.returncode not in codes:
            raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode()[-500:]}")
    return statistics.median(samples)


def foreign_graph(folder: Path) -> Path:
    """The foreign test estate in a DataHub Lite file, ingested by DataHub's own file source."""
    sys.path.insert(0, str(REPO))
    from tests.scan.scan_estates import ingest

    return ingest(folder / "shop.db", str(REPO / "tests" / "foreign" / "fixtures" / "estate_stock.json"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per measurement (median reported)")
    args = parser.parse_args()
    recall = recall_command()
    timed([*recall, "--help"], 1)  # warm the bytecode and file caches; not counted
    baseline = timed([sys.executable, "-c", "pass"], args.repeat)
    help_ms = timed([*recall, "--help"], args.repeat)
    with tempfile.TemporaryDirectory(prefix="recall-bench-") as tmp:
        graph = foreign_graph(Path(tmp))
        env = {**os.environ, "RECALL_HOME": str(Path(tmp) / "home")}
        gate = [*recall, "gate", "churn_model", "--graph", str(graph)]
        timed(gate, 1, env, codes=(0, 1, 4))  # warm: the first run writes bytecode for the gate's modules
        gate_ms = timed(gate, args.repeat, env, codes=(0, 1, 4))
    rows = [("baseline: python -c pass", baseline), ("recall --help", help_ms), ("recall gate churn_model", gate_ms)]
    for label, ms in rows:
        print(f"{label:28s} {ms:8.1f} ms  {ms / baseline:6.1f}x baseline")
    print(json.dumps({"repeat": args.repeat, "baseline_ms": round(baseline, 1), "help_ms": round(help_ms, 1),
                      "help_over_baseline": round(help_ms / baseline, 2), "gate_ms": round(gate_ms, 1),
                      "gate_over_baseline": round(gate_ms / baseline, 2)}))


if __name__ == "__main__":
    main()
