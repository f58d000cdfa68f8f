"""Kept state cannot run code: a pickle planted in RECALL_HOME is never unpickled, it costs a full read with a
line naming it, and the key that signs kept state is its owner's alone (docs/security.md, the threat model)."""

from __future__ import annotations

import logging
import os
import pickle
import stat
from contextlib import closing
from pathlib import Path

import pytest
from scan_estates import SCAN_AT_MS, exact

from recall_dagster.kept.baselines import MemoryStateStore
from recall_dagster.config.load import load
from recall_dagster.errors import ConfigError
from recall_dagster.kept.incremental import snapshot_key
from recall_dagster.graph import LiteGraph
from recall_dagster.pickles import KEY_FILE
from recall_dagster.scan import run_scan
from recall_dagster.settings import Settings
from recall_dagster.kept.snapshots import SnapshotStore


class Planted:
    """Unpickling it writes ``marker``: proof that a file in the home ran code."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple:
        return (Path.write_text, (self.marker, "ran"))


def _scanned(estate, state: Path):  # noqa: ANN001, ANN202 - the estate fixture; a scan and its graph's path
    graph_file = estate("general")
    with closing(LiteGraph(graph_file)) as graph:
        first = run_scan(graph, load().scan, MemoryStateStore(), scanned_at_ms=SCAN_AT_MS, include_all=True,
                         snapshots=SnapshotStore(state))
    return first, graph_file


def _rescan(graph_file: Path, state: Path):  # noqa: ANN202 - a ScanResult
    with closing(LiteGraph(graph_file)) as graph:
        return run_scan(graph, load().scan, MemoryStateStore(), scanned_at_ms=SCAN_AT_MS, include_all=True,
                        snapshots=SnapshotStore(state))


def test_a_pickle_planted_in_place_of_any_kept_file_runs_nothing_and_costs_a_full_read(
    estate, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    state, marker = tmp_path / "state", tmp_path / "ran-code"
    first, graph_file = _scanned(estate, state)
    kept = sorted((state / "closures").glob("*.pickle"))
    assert len(kept) >= 3, kept
    for path in kept:  # the way an attacker who can write the home would: a plain pickle, stamp and all
        path.write_bytes(pickle.dumps(("any stamp", Planted(marker))))
    with caplog.at_level(logging.WARNING, logger="recall_dagster.pickles"):
        again = _rescan(graph_file, state)
    assert not marker.exists(), "a planted pickle was unpickled"
    assert again.rescan.mode == "full" and exact(again) == exact(first)
    named = " ".join(r.getMessage() for r in caplog.records)
    assert "is not signed with this home's state key" in named and str(kept[0]) in named


def test_a_forged_pack_blob_stops_the_read_with_what_to_do_and_runs_nothing(estate, tmp_path: Path) -> None:
    state, marker = tmp_path / "state", tmp_path / "ran-code"
    _, graph_file = _scanned(estate, state)
    forged = pickle.dumps(Planted(marker))
    for pack in (state / "closures").glob("*.pack"):
        pack.write_bytes(forged * (pack.stat().st_size // len(forged) + 1))
    with closing(LiteGraph(graph_file)) as graph:
        key = snapshot_key(graph.location, load().scan.resolve, True, None)
    snapshot = SnapshotStore(state).load(key)
    assert snapshot is not None, "the heads are signed and intact: the snapshot loads"
    closure = next(iter(snapshot.closures.values()))
    with pytest.raises(ConfigError, match="closure snapshot pack .* is not signed with this home's state key"):
        closure.whole()
    assert not marker.exists()


def test_the_state_key_is_its_owner_s_alone_and_one_open_to_others_is_replaced(estate, tmp_path: Path) -> None:
    state = tmp_path / "state"
    first, graph_file = _scanned(estate, state)
    key = state / KEY_FILE
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert _rescan(graph_file, state).rescan.mode == "incremental"
    os.chmod(key, 0o644)  # readable by others: anyone could have signed with it
    again = _rescan(graph_file, state)
    assert again.rescan.mode == "full" and exact(again) == exact(first)
    assert stat.S_IMODE(key.stat().st_mode) == 0o600


def test_the_home_is_made_owner_only(tmp_path: Path) -> None:
    home = Settings(home=tmp_path / "home", graph=str(tmp_path / "graph.db")).ensure_home()
    assert stat.S_IMODE(home.stat().st_mode) & 0o077 == 0
