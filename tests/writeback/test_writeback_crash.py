"""A write-back or an incident sync killed (SIGKILL) part-way through: the next run completes it, and the graph
ends exactly where one uninterrupted run leaves it, every entity once."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path
from typing import Callable

import pytest

from recall_dagster.graph import LiteGraph

RECALL = str(Path(sys.executable).parent / "recall")
KINDS = ("assertion", "incident", "document", "structuredProperty")
WRITE_BACK = ("scan", "--write", "--json", "--as-of", "2025-06-01T00:00:00Z")
SYNC = ("incidents", "sync", "--json")


def recall(command: tuple[str, ...], graph: Path, home: Path, config: Path,
           kill_when: Callable[[], bool] | None = None) -> subprocess.CompletedProcess | None:
    """``recall COMMAND`` on ``graph``; with ``kill_when``, SIGKILLed as soon as it holds (None then)."""
    args = [RECALL, *command, "--graph", str(graph), "--config", str(config)]
    env = {"RECALL_HOME": str(home), "PATH": "/usr/bin:/bin"}
    if kill_when is None:
        return subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
    process = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while process.poll() is None and not kill_when():
        time.sleep(0.002)
    process.send_signal(signal.SIGKILL)
    process.wait()
    return None


def after(seconds: float) -> Callable[[], bool]:
    start = time.perf_counter()
    return lambda: time.perf_counter() - start >= seconds


def evidence_holds(home: Path, name: str) -> Callable[[], bool]:
    """Whether a run started from now has written ``name`` into its evidence folder: a point reached by
    progress, not by the clock, however loaded the machine."""
    before = set((home / "evidence").glob("recall-*"))
    return lambda: any((d / name).exists() for d in set((home / "evidence").glob("recall-*")) - before)


def recall_state(graph: Path) -> dict[str, list[str]]:
    """What Recall wrote, by kind: the URNs of each (an entity written twice would still be one URN, so a
    second entity for one subject shows as an extra URN)."""
    with closing(LiteGraph(graph, read_only=True)) as lite:
        return {kind: lite.list_urns(kind) for kind in KINDS}


@pytest.mark.parametrize("command", [WRITE_BACK, SYNC], ids=["write-back", "incidents-sync"])
def test_a_killed_run_is_completed_by_the_next_exactly_once(command: tuple[str, ...], lite_path: Path,
                                                          tmp_path: Path) -> None:
    config = tmp_path / "fast.yaml"
    config.write_text("writeback:\n  retry: {attempts: 1, backoff_seconds: 0, max_backoff_seconds: 0}\n")
    reference = tmp_path / "reference.db"
    shutil.copyfile(lite_path, reference)
    started = time.perf_counter()
    once = recall(command, reference, tmp_path / "ref-home", config)
    took = time.perf_counter() - started
    assert once is not None and once.returncode in (0, 1), once.stderr if once else ""

    home = tmp_path / "home"
    if command == WRITE_BACK:  # evidence on disk (no remote write yet), the plan made (writing starts), late
        points = [lambda: evidence_holds(home, "findings.json"), lambda: evidence_holds(home, "plan.json"),
                  lambda: after(took * 0.95)]
    else:
        points = [lambda share=share: after(took * share) for share in (0.6, 0.8, 0.95)]
    for point in points:
        recall(command, lite_path, home, config, kill_when=point())
    done = recall(command, lite_path, home, config)
    assert done is not None and done.returncode == once.returncode, done.stderr
    answer = json.loads(done.stdout)
    if command == WRITE_BACK:
        report = answer["writeback"]
        assert report["ok"] and all(c.get("pending", 0) == 0 for c in report["counts"].values()), report
        evidence = sorted((home / "evidence").glob("recall-*"))
        assert len(evidence) > 1, "at least one killed run had written its evidence and begun writing to the graph"
        assert {p.name for p in evidence[-1].iterdir()} == {"findings.json", "plan.json", "report.md", "outcome.json"}
    else:
        assert answer["failures"] == [] and (answer["raised"] or answer["active"]), answer

    whole = recall_state(reference)
    assert recall_state(lite_path) == whole and sum(len(v) for v in whole.values()) > 0
