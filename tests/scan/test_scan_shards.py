"""Shards of an estate, scanned apart and merged, add up to one scan of the whole estate."""

from __future__ import annotations

import tempfile
from contextlib import closing
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from scan_estates import SCAN_AT_MS

from recall_dagster.errors import ConfigError
from recall_dagster.estate.shards import Shard
from recall_dagster.graph import LiteGraph
from recall_dagster.kept.baselines import JsonStateStore, MemoryStateStore
from recall_dagster.config.load import load
from recall_dagster.scan import Pipeline, run_scan
from recall_dagster.settings import Settings
from recall_dagster.kept.snapshots import SnapshotStore
from recall_dagster.writeback.run import dry_run
from tests.fuzz.estates import NOW_MS, estates

CONFIG = load().scan


def _json(result) -> dict:  # noqa: ANN001 - a ScanResult
    return {k: v for k, v in result.contract().as_json().items() if k != "resolve"}


def _sharded(graph, store_for, count: int, at_ms: int, snapshots=None, **options):  # noqa: ANN001, ANN003
    """The shards' parts, each its own pipeline as parallel runs are, and the scan they gather into."""
    parts = [Pipeline(CONFIG, store_for(shard), snapshots).shard(graph, scanned_at_ms=at_ms, shard=shard, **options)
             for shard in Shard.all(count)]
    pipeline = Pipeline(CONFIG, store_for(None), snapshots)
    return parts, pipeline.finish(graph, pipeline.gathered(graph, parts))


@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(estates())
def test_four_shards_add_up_to_one_scan_of_any_estate(mcps) -> None:
    with tempfile.TemporaryDirectory() as scratch, closing(LiteGraph(Path(scratch) / "g.db")) as graph:
        graph.emit_mcps(mcps)
        whole = run_scan(graph, CONFIG, MemoryStateStore(), scanned_at_ms=NOW_MS, include_all=True)
        store = MemoryStateStore()
        parts, merged = _sharded(graph, lambda _: store, 4, NOW_MS, include_all=True)
        assert _json(merged) == _json(whole)
        owners = [{c.urn for c in p.closures} for p in parts]
        assert sum(map(len, owners)) == len(set().union(*owners)) == len(whole.models)  # each model in one shard


def test_shards_write_back_and_record_what_one_scan_does(estate, tmp_path) -> None:
    """Each shard in its own store object over one state folder, as parallel runs share a volume; they
    also keep snapshots of their own, and a rescan of the shards still adds up."""
    path = estate("general")
    state = tmp_path / "sharded" / "state"
    with closing(LiteGraph(path)) as graph:
        whole = run_scan(graph, CONFIG, JsonStateStore(tmp_path / "whole"), scanned_at_ms=SCAN_AT_MS, include_all=True)
        parts, merged = _sharded(graph, lambda _: JsonStateStore(state), 4, SCAN_AT_MS, include_all=True,
                                 snapshots=SnapshotStore(state))
        assert sorted(len(p.closures) for p in parts) != [0, 0, 0, len(whole.models)]  # the cut really cuts
        assert _json(merged) == _json(whole)
        assert JsonStateStore(state).load_baselines() == JsonStateStore(tmp_path / "whole").load_baselines()
        wb = load().writeback
        planned = [dry_run(graph, r, Settings.from_env(home=tmp_path / "h"), wb, SCAN_AT_MS).plan
                   for r in (whole, merged)]
        assert [w.to_json() for w in planned[0].writes] == [w.to_json() for w in planned[1].writes]

        later = SCAN_AT_MS + 3_600_000
        again_parts, again = _sharded(graph, lambda _: JsonStateStore(state), 4, later, include_all=True,
                                      snapshots=SnapshotStore(state))
        assert again.rescan.mode == "incremental" and again.rescan.reread == 0
        assert _json(again) == _json(run_scan(graph, CONFIG, JsonStateStore(tmp_path / "whole"), scanned_at_ms=later,
                                              include_all=True))


def test_shards_that_do_not_add_up_are_refused(estate) -> None:
    with closing(LiteGraph(estate("general"))) as graph:
        pipeline = Pipeline(CONFIG, MemoryStateStore())
        parts = [pipeline.shard(graph, scanned_at_ms=SCAN_AT_MS, shard=s) for s in Shard.all(4)]
        with pytest.raises(ConfigError, match="missing 2-of-4"):
            pipeline.gathered(graph, [parts[0], parts[1], parts[3]])
        with pytest.raises(ConfigError, match="given twice 1-of-4"):
            pipeline.gathered(graph, [*parts, parts[1]])
        late = pipeline.shard(graph, scanned_at_ms=SCAN_AT_MS + 1, shard=Shard(3, 4))
        with pytest.raises(ConfigError, match="different instants .*3-of-4 at"):
            pipeline.gathered(graph, [*parts[:3], late])
        with pytest.raises(ConfigError, match="no shard to merge"):
            pipeline.gathered(graph, [])
        with pytest.raises(ConfigError, match="a shard may not hold the table"):
            pipeline.detect(pipeline.gathered(graph, parts), accept_schema=["*"])
    with pytest.raises(ConfigError, match="INDEX-of-COUNT"):
        Shard.parse("2/4")
    with pytest.raises(ConfigError, match="does not exist"):
        Shard.parse("4-of-4")
