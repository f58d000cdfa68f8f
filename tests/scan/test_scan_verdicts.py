"""A rescan keeps the last scan's verdicts on closures no change reached, and judges anew what may have turned."""

from __future__ import annotations

import importlib
from contextlib import closing
from dataclasses import replace

import pytest
from detector_spy import count_detector_runs, volatile_detectors
from scan_estates import SCAN_AT_MS

from recall_dagster.detect import registry
from recall_dagster.detect.config import DetectorConfig
from recall_dagster.graph import LiteGraph
from recall_dagster.scan import MemoryStateStore, load_config, run_scan
from recall_dagster.snapshots import SnapshotStore

DAY = 86_400_000


def _findings(result) -> list[tuple[str, str, str, str, str]]:  # noqa: ANN001 - a ScanResult
    return sorted((m.closure.urn, f.detector, f.subject, f.severity.value, f.message)
                  for m in result.models for f in m.findings)


def test_every_detector_that_reads_the_instant_or_the_baselines_says_it_is_volatile() -> None:
    for detector in registry.DETECTORS:
        module = importlib.import_module(f"recall_dagster.detect.{detector.name}")
        source = open(module.__file__).read()
        reads = "scanned_at_ms" in source or "schema_baselines" in source
        assert detector.volatile == reads, f"{detector.name}: VOLATILE must say whether it reads the instant or baselines"


def test_an_unchanged_estate_is_judged_again_only_by_the_detectors_that_may_have_turned(
    estate, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config, snapshots, baselines = load_config(), SnapshotStore(tmp_path / "state"), MemoryStateStore()
    runs = count_detector_runs(monkeypatch)
    with closing(LiteGraph(estate("general"))) as graph:
        first = run_scan(graph, config, baselines, scanned_at_ms=SCAN_AT_MS, include_all=True, snapshots=snapshots)
        models = len(first.models)
        assert runs["pii_exposure"] == runs["upstream_staleness"] == models
        runs.clear()
        later = SCAN_AT_MS + 60 * DAY  # long enough for tables to go stale
        again = run_scan(graph, config, baselines, scanned_at_ms=later, include_all=True, snapshots=snapshots)
        assert set(runs) == volatile_detectors() and all(n == models for n in runs.values())
        full = run_scan(graph, config, MemoryStateStore(baselines.baselines), scanned_at_ms=later, include_all=True)
    assert _findings(again) == _findings(full)
    stale = [f for f in _findings(again) if f[1] == "upstream_staleness"]
    assert len(stale) > len([f for f in _findings(first) if f[1] == "upstream_staleness"])


def test_a_new_config_judges_every_closure_again(estate, tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    config, snapshots, baselines = load_config(), SnapshotStore(tmp_path / "state"), MemoryStateStore()
    with closing(LiteGraph(estate("general"))) as graph:
        run_scan(graph, config, baselines, scanned_at_ms=SCAN_AT_MS, include_all=True, snapshots=snapshots)
        quiet = replace(config, detectors={
            **config.detectors, "ownership_vacuum": DetectorConfig(enabled=False, severity={}),
        })
        runs = count_detector_runs(monkeypatch)
        again = run_scan(graph, quiet, baselines, scanned_at_ms=SCAN_AT_MS, include_all=True, snapshots=snapshots)
        assert runs["pii_exposure"] == len(again.models)
        full = run_scan(graph, quiet, MemoryStateStore(baselines.baselines), scanned_at_ms=SCAN_AT_MS,
                        include_all=True)
    assert _findings(again) == _findings(full)
    assert not any(f[1] == "ownership_vacuum" for f in _findings(again))


def test_damaged_verdicts_cost_one_full_detection_not_an_error(estate, tmp_path) -> None:
    config, snapshots, baselines = load_config(), SnapshotStore(tmp_path / "state"), MemoryStateStore()
    with closing(LiteGraph(estate("general"))) as graph:
        first = run_scan(graph, config, baselines, scanned_at_ms=SCAN_AT_MS, include_all=True, snapshots=snapshots)
        [verdicts] = snapshots.folder.glob("*.verdicts.pickle")
        verdicts.write_bytes(b"garbage")
        again = run_scan(graph, config, baselines, scanned_at_ms=SCAN_AT_MS, include_all=True, snapshots=snapshots)
    assert _findings(again) == _findings(first)
    assert verdicts.read_bytes() != b"garbage"
