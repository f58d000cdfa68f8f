"""The links a rescan follows a change by, kept in SQLite: changed in place, whole or not at all."""

from __future__ import annotations

import subprocess
import sys
from contextlib import closing
from dataclasses import replace

from scan_estates import SCAN_AT_MS, exact
from test_scan_incremental import _schema
from test_scan_rescan_exact import HOUR

from recall_dagster.kept.baselines import MemoryStateStore
from recall_dagster.config.load import load
from recall_dagster.kept.incremental import resolve_incremental
from recall_dagster.estate.resolve import resolve_closures
from recall_dagster.graph import LiteGraph
from recall_dagster.scan import run_scan
from recall_dagster.kept.snapshots import SnapshotStore


def test_links_another_scan_moved_on_while_one_read_them_cost_a_full_read(estate, tmp_path) -> None:
    """Two scans of one graph with one state: the slower one loaded the snapshot, the faster one changed the
    links in place. The slower one must not follow a change by readers of another instant."""
    config = load().scan
    store = SnapshotStore(tmp_path / "state")
    with closing(LiteGraph(estate("general"))) as graph:
        first = run_scan(graph, config, MemoryStateStore(), scanned_at_ms=SCAN_AT_MS, snapshots=store)
        datasets = sorted({d for m in first.models for d in m.closure.datasets})
        key = first.rescan.snapshot
        loaded = SnapshotStore(tmp_path / "state").load(key)
        held = loaded.links()  # opened before the faster scan changes them
        slower = replace(loaded, links=lambda: held)
        graph.emit_mcps([_schema(datasets[0], "text")])
        faster = run_scan(graph, config, MemoryStateStore(), scanned_at_ms=SCAN_AT_MS, snapshots=store)
        assert faster.rescan.mode == "incremental"
        graph.emit_mcps([_schema(datasets[-1], "text")])
        closures, _, rescan = resolve_incremental(graph, config.resolve,
                                                  include_all=False, previous=slower)
        assert (rescan.mode, rescan.reason) == ("full", "another scan rewrote the last scan's links while this "
                                                        "one read them")
        assert closures == resolve_closures(graph, config.resolve, include_all=False)


_DIE_MID_CHANGE = """
import os, sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("PRAGMA cache_size = 1")  # pages reach the file before the commit, as in a large change
db.execute("BEGIN IMMEDIATE")
db.execute("UPDATE meta SET value = 'halfway' WHERE name = 'token'")
db.execute("DELETE FROM readers")
os._exit(1)
"""


def test_a_scan_that_dies_changing_the_links_costs_a_full_read_and_no_wrong_finding(estate, tmp_path) -> None:
    """Killed inside the transaction: SQLite's journal is left beside the file. The next scan reads in full
    and finds what a full scan finds; the file it keeps is whole, its journal gone."""
    config, state = load().scan, tmp_path / "state"
    store = SnapshotStore(state)
    with closing(LiteGraph(estate("general"))) as graph:
        first = run_scan(graph, config, MemoryStateStore(), scanned_at_ms=SCAN_AT_MS, snapshots=store)
        [links] = store.folder.glob("*.links.sqlite")
        subprocess.run([sys.executable, "-c", _DIE_MID_CHANGE, str(links)], check=False)
        journal = links.with_name(links.name + "-journal")
        assert journal.exists()
        graph.emit_mcps([_schema(next(iter(first.models[0].closure.datasets)), "text")])
        at = SCAN_AT_MS + HOUR
        after = run_scan(graph, config, MemoryStateStore(), scanned_at_ms=at, snapshots=SnapshotStore(state))
        full = run_scan(graph, config, MemoryStateStore(), scanned_at_ms=at)
        assert after.rescan.mode == "full" and exact(after) == exact(full)
        assert not journal.exists()
        graph.emit_mcps([_schema(next(iter(first.models[-1].closure.datasets)), "bigint")])
        at += HOUR
        again = run_scan(graph, config, MemoryStateStore(), scanned_at_ms=at, snapshots=SnapshotStore(state))
        full = run_scan(graph, config, MemoryStateStore(), scanned_at_ms=at)
        assert again.rescan.mode == "incremental" and exact(again) == exact(full)
