"""Kept state written by other code is refused: each stamp covers the source of every class its pickles hold.

A closure snapshot, the kept verdicts and a shard's part are pickles stamped with
a fingerprint of the source that defines what they hold (``recall_dagster.pickles``).
A class defined outside that source could change shape while the stamp stays
the same, and an old pickle would then load as something else. So a real scan
keeps its state here, every pickle it stamps is read back through an unpickler
that notes each class it builds, and each class's module must lie in the
source its stamp covers.
"""

from __future__ import annotations

import io
import pickle
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from scan_estates import SCAN_AT_MS, ingest

from recall_dagster import shard_parts
from recall_dagster.config.load import load
from recall_dagster.estate.shards import Shard
from recall_dagster.graph import LiteGraph
from recall_dagster.kept import snapshots
from recall_dagster.kept.baselines import JsonStateStore
from recall_dagster.kept.snapshots import SnapshotStore
from recall_dagster.pickles import fingerprint
from recall_dagster.scan import Pipeline


class _Naming(pickle.Unpickler):
    """Loads a pickle and notes the module of every class it names."""

    def __init__(self, data: bytes) -> None:
        super().__init__(io.BytesIO(data))
        self.modules: set[str] = set()

    def find_class(self, module: str, name: str) -> Any:
        self.modules.add(module)
        return super().find_class(module, name)


def _modules(value: object) -> set[str]:
    naming = _Naming(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
    naming.load()
    return {m for m in naming.modules if m.startswith("recall_dagster")}


def _covers(sources: tuple[ModuleType, ...], module: str) -> bool:
    """Whether ``fingerprint(*sources)`` reads ``module``'s source: a module named, or one of a package's own."""
    return any(module == s.__name__ or (hasattr(s, "__path__") and module.rpartition(".")[0] == s.__name__)
               for s in sources)


def _recording(monkeypatch: pytest.MonkeyPatch, module: ModuleType) -> list[tuple[object, str]]:
    kept: list[tuple[object, str]] = []
    original = module.stamped

    def stamped(value: object, stamp: str, signer: Any) -> bytes:
        kept.append((value, stamp))
        return original(value, stamp, signer)

    monkeypatch.setattr(module, "stamped", stamped)
    return kept


def test_every_class_a_kept_pickle_holds_is_in_the_source_its_stamp_covers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sources = {fingerprint(*snapshots.CLOSURE_SOURCES): snapshots.CLOSURE_SOURCES,
               fingerprint(*snapshots.VERDICT_SOURCES): snapshots.VERDICT_SOURCES,
               fingerprint(*shard_parts.SOURCES): shard_parts.SOURCES}
    written = _recording(monkeypatch, snapshots)
    parts = _recording(monkeypatch, shard_parts)
    graph = LiteGraph(str(ingest(tmp_path / "g.db", "estate_general.json")))
    try:
        state = tmp_path / "state"
        pipeline = Pipeline(load().scan, JsonStateStore(state), SnapshotStore(state))
        for at_ms in (SCAN_AT_MS, SCAN_AT_MS + 1):  # the second scan keeps verdicts and the blast radius
            pipeline.scan(graph, scanned_at_ms=at_ms, include_all=True)
        sharding = Pipeline(load().scan, JsonStateStore(state))
        for index in range(2):
            shard = sharding.shard(graph, scanned_at_ms=SCAN_AT_MS, shard=Shard(index, 2))
            shard_parts.ShardParts(state, graph.location).save(shard)
    finally:
        graph.close()
    stamped = written + parts
    assert any(part.closures and part.found for part, _ in parts), "a shard's part held closures and findings"
    kinds = {stamp for _, stamp in stamped}
    assert kinds == set(sources), "closures, verdicts and a shard's part were all kept"
    outside = sorted({(m, type(value).__name__) for value, stamp in stamped for m in _modules(value)
                      if not _covers(sources[stamp], m)})
    assert outside == [], "a kept pickle holds classes its stamp does not cover"
