"""Malformed estates at volume through every read path: how many crash, how many stop with a clear error.

Each estate is drawn by hypothesis (``tests/fuzz/estates.py``: cycles, self-loops,
dangling URNs, missing and duplicate aspects, times in seconds, negative or far
ahead, nonsense profiles and metrics, non-ASCII names, a fan-in of 10,000),
written to a real Lite file, and put through scan, write-back dry-run, gate,
blind window, incidents sync and protect (``tests/fuzz/exercise.py``). A crash
is anything but an answer or a RecallError's message; an estate that takes
longer than ``--hang-s`` counts as a crash too. The first crashes' tracebacks go
to ``--crashes FILE``.

    .venv/bin/python benchmarks/fuzz_report.py --estates 1000

The last line is JSON: estates, crashes, recall_errors, slowest_s, seconds.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests' estate generator lives in the checkout

from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402

from tests.fuzz.estates import estates  # noqa: E402
from tests.fuzz.exercise import Outcome, exercise  # noqa: E402


class Hang(Exception):
    pass


def _alarm(signum: int, frame: object) -> None:
    raise Hang()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--estates", type=int, default=1000)
    parser.add_argument("--fan-in", type=int, default=10_000, help="upstreams of the widest table, when drawn")
    parser.add_argument("--hang-s", type=int, default=120, help="an estate taking longer is a crash")
    parser.add_argument("--crashes", type=Path, default=Path("fuzz_crashes.txt"))
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # third-party noise; the suite's strict filters are for the tests
    signal.signal(signal.SIGALRM, _alarm)
    totals = {"estates": 0, "crashes": 0, "recall_errors": 0, "slowest_s": 0.0}
    traces: list[str] = []
    started = time.perf_counter()

    @settings(max_examples=args.estates, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(estates(fan_in=args.fan_in))
    def one(mcps: list) -> None:
        with tempfile.TemporaryDirectory() as scratch:
            signal.alarm(args.hang_s)
            try:
                outcome = exercise(mcps, Path(scratch))
            except Hang:
                outcome = Outcome(crashes=[f"hang: more than {args.hang_s} s"], seconds=float(args.hang_s))
            finally:
                signal.alarm(0)
        totals["estates"] += 1
        totals["crashes"] += bool(outcome.crashes)
        totals["recall_errors"] += outcome.recall_errors
        totals["slowest_s"] = round(max(totals["slowest_s"], outcome.seconds), 2)
        traces.extend(outcome.crashes[:1] if len(traces) < 20 else ())
        if totals["estates"] % 50 == 0:
            print(f"{totals['estates']} estates, {totals['crashes']} crashes", file=sys.stderr, flush=True)

    one()
    if traces:
        args.crashes.write_text("\n\n".join(traces))
    print(json.dumps({**totals, "seconds": round(time.perf_counter() - started, 1)}))


if __name__ == "__main__":
    main()
