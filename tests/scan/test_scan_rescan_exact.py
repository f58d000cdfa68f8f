"""A rescan finds exactly what a full scan finds, whatever changed between them: data, tests, time, deletions.

Rescans keep the closures no change reached and the verdicts that still hold
(:mod:`recall_dagster.kept.verdicts`, :mod:`recall_dagster.detect.holds`); each case
below changes the estate or lets time pass, rescans twice from the kept state
and compares every finding whole (message and evidence) and the blast radius
with a scan that reads and judges everything.
"""

from __future__ import annotations

import tempfile
from contextlib import closing
from pathlib import Path
from typing import Callable

import datahub.metadata.schema_classes as dh
import pytest
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scan_estates import SCAN_AT_MS, exact

from recall_dagster.kept.baselines import MemoryStateStore
from recall_dagster.config.load import load
from recall_dagster.graph import LiteGraph
from recall_dagster.scan import run_scan
from recall_dagster.kept.snapshots import SnapshotStore
from tests.fuzz.estates import NOW_MS, estates

HOUR, DAY = 3_600_000, 86_400_000


def _run(assertion: str, dataset: str, at_ms: int, kind: str) -> MetadataChangeProposalWrapper:
    return MetadataChangeProposalWrapper(entityUrn=assertion, aspect=dh.AssertionRunEventClass(
        timestampMillis=at_ms, runId=f"run-{at_ms}", asserteeUrn=dataset, assertionUrn=assertion,
        status="COMPLETE", result=dh.AssertionResultClass(type=kind, unexpectedCount=12 if kind == "FAILURE" else 0)))


def _retyped(graph: LiteGraph, dataset: str) -> MetadataChangeProposalWrapper:
    schema = graph.get_aspects([dataset], [dh.SchemaMetadataClass])[dataset][dh.SchemaMetadataClass.ASPECT_NAME]
    schema.fields[0].nativeDataType = "text"
    return MetadataChangeProposalWrapper(entityUrn=dataset, aspect=schema)


Change = Callable[[LiteGraph, object], tuple[list[MetadataChangeProposalWrapper], int]]  # -> writes, rescan instant


def _a_dataset_retyped(graph, first):  # noqa: ANN001, ANN202
    dataset = next(u for m in first.models for u, d in sorted(m.closure.datasets.items()) if d.fields)
    return [_retyped(graph, dataset)], SCAN_AT_MS + HOUR


def _a_test_fails_after_the_scan(graph, first):  # noqa: ANN001, ANN202
    urn, dataset = next((a.urn, u) for m in first.models for u, d in sorted(m.closure.datasets.items())
                        for a in d.assertions)
    return [_run(urn, dataset, SCAN_AT_MS + HOUR, "FAILURE")], SCAN_AT_MS + 2 * HOUR


def _a_test_passes_again(graph, first):  # noqa: ANN001, ANN202
    failing = next((a.urn, u) for m in first.models for u, d in sorted(m.closure.datasets.items())
                   for a in d.assertions if a.result == "FAILURE")
    return [_run(*failing, SCAN_AT_MS + HOUR, "SUCCESS")], SCAN_AT_MS + 2 * HOUR


def _time_crosses_a_window(graph, first):  # noqa: ANN001, ANN202
    return [], SCAN_AT_MS + 8 * DAY  # past the default seven-day window of every table fresh at the first scan


def _a_dataset_removed(graph, first):  # noqa: ANN001, ANN202
    dataset = next(u for m in first.models for u in sorted(m.closure.datasets))
    return [MetadataChangeProposalWrapper(entityUrn=dataset, aspect=dh.StatusClass(removed=True))], SCAN_AT_MS + HOUR


def _a_model_removed(graph, first):  # noqa: ANN001, ANN202
    model = first.models[0].closure.urn
    return [MetadataChangeProposalWrapper(entityUrn=model, aspect=dh.StatusClass(removed=True))], SCAN_AT_MS + HOUR


CHANGES: dict[str, Change] = {
    "a dataset retyped": _a_dataset_retyped,
    "a test fails after the scan": _a_test_fails_after_the_scan,
    "a failing test passes again": _a_test_passes_again,
    "time crosses a staleness window": _time_crosses_a_window,
    "a dataset removed": _a_dataset_removed,
    "a model removed": _a_model_removed,
}


@pytest.mark.parametrize("change", CHANGES)
def test_a_rescan_after_a_change_finds_what_a_full_scan_finds(change: str, estate, tmp_path) -> None:
    config, snapshots, baselines = load().scan, SnapshotStore(tmp_path / "state"), MemoryStateStore()
    with closing(LiteGraph(estate("general"))) as graph:
        first = run_scan(graph, config, baselines, scanned_at_ms=SCAN_AT_MS, include_all=True, snapshots=snapshots)
        writes, later = CHANGES[change](graph, first)
        graph.emit_mcps(writes)
        again = run_scan(graph, config, baselines, scanned_at_ms=later, include_all=True, snapshots=snapshots)
        twice = run_scan(graph, config, baselines, scanned_at_ms=later, include_all=True, snapshots=snapshots)
        full = run_scan(graph, config, MemoryStateStore(baselines.baselines), scanned_at_ms=later, include_all=True)
    assert again.rescan.mode == "incremental"
    assert exact(again) == exact(full) == exact(twice)
    assert exact(full) != exact(first), "the change made a difference a rescan could miss"


def test_a_test_run_known_before_the_scan_but_dated_after_it_turns_the_verdict_when_its_time_comes(
    estate, tmp_path
) -> None:
    """Scans ``--as-of`` instants around a run the graph already holds: nothing changes in the graph between
    them, and a rescan after the run's time must see it (the failing test passes again), one before must not."""
    config, snapshots, baselines = load().scan, SnapshotStore(tmp_path / "state"), MemoryStateStore()
    with closing(LiteGraph(estate("general"))) as graph:
        first = run_scan(graph, config, baselines, scanned_at_ms=SCAN_AT_MS, include_all=True)
        urn, dataset = next((a.urn, u) for m in first.models for u, d in sorted(m.closure.datasets.items())
                            for a in d.assertions if a.result == "FAILURE")
        graph.emit_mcps([_run(urn, dataset, SCAN_AT_MS + 2 * HOUR, "SUCCESS")])
        seen = []
        for at in (SCAN_AT_MS, SCAN_AT_MS + HOUR, SCAN_AT_MS + 3 * HOUR, SCAN_AT_MS + 4 * HOUR):
            rescan = run_scan(graph, config, baselines, scanned_at_ms=at, include_all=True, snapshots=snapshots)
            full = run_scan(graph, config, MemoryStateStore(baselines.baselines), scanned_at_ms=at, include_all=True)
            assert exact(rescan) == exact(full), f"at {at}"
            seen.append(any(f.subject == urn for m in rescan.models for f in m.findings))
    assert seen == [True, True, False, False]


def test_a_rescan_writes_only_what_changed_and_another_process_reads_it_back(estate, tmp_path) -> None:
    """The snapshot and the verdicts are a base and a delta of the models changed since: a rescan after one
    dataset changed leaves the base files as they were, and a scan in another process (a new store) takes the
    two together; a damaged delta or links file costs a full read, never a wrong finding."""
    config, baselines = load().scan, MemoryStateStore()
    state = tmp_path / "state"
    with closing(LiteGraph(estate("general"))) as graph:
        first = run_scan(graph, config, baselines, scanned_at_ms=SCAN_AT_MS, include_all=True,
                         snapshots=SnapshotStore(state))
        bases = {p.name: p.read_bytes() for p in (state / "closures").glob("*.pickle")}
        [links] = (state / "closures").glob("*.links.sqlite")
        links_file = links.stat().st_ino
        holders: dict[str, int] = {}
        for m in first.models:
            for u in m.closure.datasets:
                holders[u] = holders.get(u, 0) + 1
        fewest = min(sorted(holders), key=holders.__getitem__)
        field = dh.SchemaFieldClass(fieldPath="amount", type=dh.SchemaFieldDataTypeClass(dh.NumberTypeClass()),
                                    nativeDataType="text")
        graph.emit_mcps([MetadataChangeProposalWrapper(entityUrn=fewest, aspect=dh.SchemaMetadataClass(
            schemaName=fewest, platform="urn:li:dataPlatform:postgres", version=0, hash="",
            platformSchema=dh.OtherSchemaClass(rawSchema=""), fields=[field]))])
        later = SCAN_AT_MS + HOUR
        store = SnapshotStore(state)
        again = run_scan(graph, config, baselines, scanned_at_ms=later, include_all=True, snapshots=store)
        assert 0 < again.rescan.reread < len(first.models)
        # the graph's lists are kept whole; the estate's column lineage is built again, since the change
        # dropped the table's other columns
        for name, blob in bases.items():
            if not name.endswith((".listed.pickle", ".columns.pickle", ".columns.at.pickle")):
                assert (state / "closures" / name).read_bytes() == blob, f"{name} was written again"
        deltas = sorted(p.name for p in (state / "closures").glob("*.delta.pickle"))
        # the closures, their datasets and the verdicts of both passes; the links are changed in place
        assert len(deltas) == 4 and links.stat().st_ino == links_file
        full = run_scan(graph, config, MemoryStateStore(baselines.baselines), scanned_at_ms=later, include_all=True)
        elsewhere = run_scan(graph, config, baselines, scanned_at_ms=later, include_all=True,
                             snapshots=SnapshotStore(state))
        assert elsewhere.rescan.reread == 0 and exact(elsewhere) == exact(full) == exact(again)
        for delta in (state / "closures").glob("*.delta.pickle"):
            delta.write_bytes(b"garbage")
        damaged = run_scan(graph, config, baselines, scanned_at_ms=later, include_all=True,
                           snapshots=SnapshotStore(state))
        # the links moved on in place with the delta: the base alone is an older snapshot they no longer follow
        assert damaged.rescan.mode == "full" and exact(damaged) == exact(full)
        links.write_bytes(b"garbage")
        graph.emit_mcps([MetadataChangeProposalWrapper(entityUrn=fewest, aspect=dh.SchemaMetadataClass(
            schemaName=fewest, platform="urn:li:dataPlatform:postgres", version=0, hash="",
            platformSchema=dh.OtherSchemaClass(rawSchema=""), fields=[field, field]))])
        lost = run_scan(graph, config, baselines, scanned_at_ms=later, include_all=True,
                        snapshots=SnapshotStore(state))
        full = run_scan(graph, config, MemoryStateStore(baselines.baselines), scanned_at_ms=later, include_all=True)
        assert lost.rescan.mode == "full" and exact(lost) == exact(full)


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(estates(), estates(), st.booleans(), st.data())
def test_a_rescan_finds_what_a_full_scan_finds_after_any_change_at_any_later_instant(
    before, other, include_all, data,
) -> None:
    """Aspects of another drawn estate written over the first, and time moving on between scans: every
    rescan from the kept closures, verdicts and blast radius comes to exactly what a scan that reads and
    judges everything finds at that instant, under the same baselines."""
    changes = st.lists(st.sampled_from(other), max_size=4) if other else st.just([])
    rounds = data.draw(st.lists(st.tuples(changes, st.sampled_from([0, HOUR, 3 * DAY, 9 * DAY])),
                                min_size=1, max_size=3))
    config, baselines, at = load().scan, MemoryStateStore(), NOW_MS
    with tempfile.TemporaryDirectory() as scratch, closing(LiteGraph(Path(scratch) / "g.db")) as graph:
        snapshots = SnapshotStore(Path(scratch) / "state")
        graph.emit_mcps(before)
        run_scan(graph, config, baselines, scanned_at_ms=at, include_all=include_all, snapshots=snapshots)
        for change, later in rounds:
            graph.emit_mcps(change)
            at += later
            known = MemoryStateStore(baselines.baselines)
            again = run_scan(graph, config, baselines, scanned_at_ms=at, include_all=include_all,
                             snapshots=snapshots)
            full = run_scan(graph, config, known, scanned_at_ms=at, include_all=include_all)
            assert again.rescan is not None and again.rescan.mode == "incremental"
            assert exact(again) == exact(full)
