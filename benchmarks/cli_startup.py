"""How long ``recall --help`` takes to start, against a bare interpreter start.

Runs each command in a fresh process a few times and reports the median wall
time: the baseline is ``python -c pass`` on the same interpreter, the floor
any Python CLI pays; ``recall --help`` is the installed console script (or
``recall_dagster.cli:main`` when the script is not next to the interpreter).
The listing imports no subcommand, so it should stay within a small multiple
of the baseline.  Prints one JSON line last.

    .venv/bin/python benchmarks/cli_startup.py [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path


def recall_command() -> list[str]:
    """The ``recall`` console script beside this interpreter, else the same entry point through ``-c``."""
    script = Path(sys.executable).parent / "recall"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from recall_dagster.cli import main; sys.argv[0] = 'recall'; main()"]


def timed(argv: list[str], repeat: int) -> float:
    """Median wall time in milliseconds of running ``argv`` to completion; it must exit 0."""
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per measurement (median reported)")
    args = parser.parse_args()
    recall = recall_command()
    timed([*recall, "--help"], 1)  # warm the bytecode and file caches; not counted
    baseline = timed([sys.executable, "-c", "pass"], args.repeat)
    help_ms = timed([*recall, "--help"], args.repeat)
    rows = [("baseline: python -c pass", baseline), ("recall --help", help_ms)]
    for label, ms in rows:
        print(f"{label:28s} {ms:8.1f} ms  {ms / baseline:6.1f}x baseline")
    print(json.dumps({"repeat": args.repeat, "baseline_ms": round(baseline, 1), "help_ms": round(help_ms, 1),
                      "help_over_baseline": round(help_ms / baseline, 2)}))


if __name__ == "__main__":
    main()
