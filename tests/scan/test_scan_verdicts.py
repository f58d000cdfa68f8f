"""A rescan keeps the last scan's verdicts on closures no change reached, and judges anew what may have turned."""

from __future__ import annotations

import importlib
from contextlib import closing
from dataclasses import replace

import datahub.metadata.schema_classes as dh
import pytest
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from detector_spy import count_detector_runs, volatile_detectors
from scan_estates import SCAN_AT_MS, exact

from recall_dagster.detect import catalogue
from recall_dagster.detect.config import DetectorConfig
from recall_dagster.detect.state import DetectorState
from recall_dagster.estate.resolve import resolve_closures
from recall_dagster.graph import LiteGraph
from recall_dagster.kept.baselines import MemoryStateStore
from recall_dagster.config.load import load
from recall_dagster.scan import record_baselines, run_scan
from recall_dagster.kept.snapshots import SnapshotStore
from recall_dagster.kept.verdicts import config_digest, reusable_spread

DAY = 86_400_000


def _findings(result) -> list[tuple[str, str, str, str, str]]:  # noqa: ANN001 - a ScanResult
    return sorted((m.closure.urn, f.detector, f.subject, f.severity.value, f.message)
                  for m in result.models for f in m.findings)


def test_every_detector_that_reads_the_instant_or_the_baselines_says_so() -> None:
    for detector in catalogue.DETECTORS:
        module = importlib.import_module(f"recall_dagster.detect.{detector.name}")
        source = open(module.__file__).read()
        assert detector.volatile == ("state.at_ms" in source), f"{detector.name}: must declare reads=Reads.INSTANT"
        assert detector.reads_baselines == ("schema_baselines" in source), \
            f"{detector.name}: must declare reads=Reads.BASELINES"


def test_an_unchanged_estate_is_judged_again_only_by_the_detectors_that_may_have_turned(
    estate, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config, snapshots, baselines = load().scan, SnapshotStore(tmp_path / "state"), MemoryStateStore()
    runs = count_detector_runs(monkeypatch)
    with closing(LiteGraph(estate("general"))) as graph:
        first = run_scan(graph, config, baselines, scanned_at_ms=SCAN_AT_MS, include_all=True, snapshots=snapshots)
        models = len(first.models)
        assert runs["pii_exposure"] == runs["upstream_staleness"] == models
        runs.clear()
        minute = run_scan(graph, config, baselines, scanned_at_ms=SCAN_AT_MS + 60_000, include_all=True,
                          snapshots=snapshots)
        assert runs == {}, "a minute on, no test ran, no record was written and no window ran out"
        later = SCAN_AT_MS + 60 * DAY  # long enough for tables to go stale
        again = run_scan(graph, config, baselines, scanned_at_ms=later, include_all=True, snapshots=snapshots)
        assert set(runs) <= volatile_detectors() and 0 < runs["upstream_staleness"] <= models
        full = run_scan(graph, config, MemoryStateStore(baselines.baselines), scanned_at_ms=later, include_all=True)
        at_minute = run_scan(graph, config, MemoryStateStore(baselines.baselines), scanned_at_ms=SCAN_AT_MS + 60_000,
                             include_all=True)
    assert exact(again) == exact(full) and exact(minute) == exact(at_minute)
    stale = [f for f in _findings(again) if f[1] == "upstream_staleness"]
    assert len(stale) > len([f for f in _findings(first) if f[1] == "upstream_staleness"])


def test_a_new_config_judges_every_closure_again(estate, tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    config, snapshots, baselines = load().scan, SnapshotStore(tmp_path / "state"), MemoryStateStore()
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
    config, snapshots, baselines = load().scan, SnapshotStore(tmp_path / "state"), MemoryStateStore()
    with closing(LiteGraph(estate("general"))) as graph:
        first = run_scan(graph, config, baselines, scanned_at_ms=SCAN_AT_MS, include_all=True, snapshots=snapshots)
        [verdicts] = snapshots.folder.glob("*.verdicts.pickle")
        verdicts.write_bytes(b"garbage")
        again = run_scan(graph, config, baselines, scanned_at_ms=SCAN_AT_MS, include_all=True, snapshots=snapshots)
    assert _findings(again) == _findings(first)
    assert verdicts.read_bytes() != b"garbage"


def _blast_runs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The closures the second pass judged, in this process."""
    runs: list[str] = []
    detect = catalogue.blast_radius.detect

    def counted(closure, config, state):  # noqa: ANN001, ANN202 - the detector signature
        runs.append(closure.urn)
        return detect(closure, config, state)

    monkeypatch.setattr(catalogue.blast_radius, "detect", counted)
    return runs


def test_changed_baselines_judge_schema_drift_again_on_unchanged_closures(estate, tmp_path, monkeypatch) -> None:
    """Verdicts against the schema baselines hold while the baselines do: one edited behind the scan's back
    (an older schema put back) brings drift the next rescan must see."""
    config, snapshots, baselines = load().scan, SnapshotStore(tmp_path / "state"), MemoryStateStore()
    with closing(LiteGraph(estate("general"))) as graph:
        first = run_scan(graph, config, baselines, scanned_at_ms=SCAN_AT_MS, include_all=True, snapshots=snapshots)
        assert not [f for m in first.models for f in m.findings if f.detector == "training_source_schema_drift"]
        table, columns = next((u, c) for u, c in sorted(baselines.baselines.items()) if c)
        column = sorted(columns)[0]
        baselines.save_baselines({table: {**columns, column: f"not {columns[column]}"}})
        runs = count_detector_runs(monkeypatch)
        again = run_scan(graph, config, baselines, scanned_at_ms=SCAN_AT_MS, include_all=True, snapshots=snapshots)
        assert runs["training_source_schema_drift"] == len(again.models) and "pii_exposure" not in runs
        full = run_scan(graph, config, MemoryStateStore(baselines.baselines), scanned_at_ms=SCAN_AT_MS,
                        include_all=True)
        runs.clear()
        same = run_scan(graph, config, baselines, scanned_at_ms=SCAN_AT_MS, include_all=True, snapshots=snapshots)
        assert runs == {}  # the new baselines' verdicts are kept in turn, and at the same instant every other
    drift = [f for f in _findings(again) if f[1] == "training_source_schema_drift"]
    assert drift and _findings(again) == _findings(full) == _findings(same)


def test_the_blast_radius_is_kept_while_the_same_datasets_are_at_risk(estate, tmp_path, monkeypatch) -> None:
    config, snapshots, baselines = load().scan, SnapshotStore(tmp_path / "state"), MemoryStateStore()
    runs = _blast_runs(monkeypatch)
    with closing(LiteGraph(estate("general"))) as graph:
        first = run_scan(graph, config, baselines, scanned_at_ms=SCAN_AT_MS, include_all=True, snapshots=snapshots)
        assert first.blast_radius and len(runs) == len(first.models)
        runs.clear()
        same = run_scan(graph, config, baselines, scanned_at_ms=SCAN_AT_MS, include_all=True, snapshots=snapshots)
        assert runs == [] and same.blast_radius == first.blast_radius and _findings(same) == _findings(first)
        later = SCAN_AT_MS + 60 * DAY  # tables go stale: more datasets at risk
        again = run_scan(graph, config, baselines, scanned_at_ms=later, include_all=True, snapshots=snapshots)
        assert len(runs) == len(first.models)
        full = run_scan(graph, config, MemoryStateStore(baselines.baselines), scanned_at_ms=later, include_all=True)
    assert again.blast_radius == full.blast_radius != first.blast_radius
    assert _findings(again) == _findings(full)


def test_verdicts_are_kept_only_on_the_closures_they_were_found_on(estate, tmp_path, monkeypatch) -> None:
    """A scan that saved its snapshot and died before its verdicts leaves verdicts of older closures: the next
    scan, reusing that snapshot's closures, judges them all again instead of taking those."""
    config, snapshots, baselines = load().scan, SnapshotStore(tmp_path / "state"), MemoryStateStore()
    with closing(LiteGraph(estate("general"))) as graph:
        first = run_scan(graph, config, baselines, scanned_at_ms=SCAN_AT_MS, include_all=True, snapshots=snapshots)
        owner = next(o.urn for m in first.models for o in m.closure.model.owners if o.active)
        graph.emit_mcps([MetadataChangeProposalWrapper(entityUrn=owner, aspect=dh.CorpUserInfoClass(active=False))])

        def dies(*_args) -> None:  # noqa: ANN002
            raise RuntimeError("the scan died")

        with monkeypatch.context() as crash:
            crash.setattr(SnapshotStore, "save_verdicts", dies)
            with pytest.raises(RuntimeError):
                run_scan(graph, config, baselines, scanned_at_ms=SCAN_AT_MS, include_all=True, snapshots=snapshots)
        runs = count_detector_runs(monkeypatch)
        after = run_scan(graph, config, baselines, scanned_at_ms=SCAN_AT_MS, include_all=True, snapshots=snapshots)
        assert after.rescan.reread == 0 and runs["ownership_vacuum"] == len(after.models)
        full = run_scan(graph, config, MemoryStateStore(baselines.baselines), scanned_at_ms=SCAN_AT_MS,
                        include_all=True)
    assert _findings(after) == _findings(full) != _findings(first)


def test_a_model_gone_since_the_last_scan_leaves_no_trace_in_a_kept_blast_radius(estate, tmp_path) -> None:
    config, snapshots, baselines = load().scan, SnapshotStore(tmp_path / "state"), MemoryStateStore()
    with closing(LiteGraph(estate("general"))) as graph:
        first = run_scan(graph, config, baselines, scanned_at_ms=SCAN_AT_MS, include_all=True, snapshots=snapshots)
        gone = next(urn for b in first.blast_radius for urn in b.models)
        graph.emit_mcps([MetadataChangeProposalWrapper(entityUrn=gone, aspect=dh.StatusClass(removed=True))])
        again = run_scan(graph, config, baselines, scanned_at_ms=SCAN_AT_MS, include_all=True, snapshots=snapshots)
        full = run_scan(graph, config, MemoryStateStore(baselines.baselines), scanned_at_ms=SCAN_AT_MS,
                        include_all=True)
    assert gone not in {m.closure.urn for m in again.models}
    assert again.blast_radius == full.blast_radius and _findings(again) == _findings(full)


def test_a_kept_blast_radius_covers_exactly_the_closures_of_the_scan(estate, tmp_path) -> None:
    """A model gone from the listing (and no other read again) would leave its exposure in a kept spread."""
    config, snapshots, baselines = load().scan, SnapshotStore(tmp_path / "state"), MemoryStateStore()
    with closing(LiteGraph(estate("general"))) as graph:
        run_scan(graph, config, baselines, scanned_at_ms=SCAN_AT_MS, include_all=True, snapshots=snapshots)
        same = run_scan(graph, config, baselines, scanned_at_ms=SCAN_AT_MS, include_all=True, snapshots=snapshots)
    earlier, closures = snapshots.load_spread(same.rescan.snapshot), [m.closure for m in same.models]
    digest = config_digest(config)
    assert earlier is not None and reusable_spread(earlier, same.rescan, digest, closures) is earlier.spread
    assert reusable_spread(earlier, same.rescan, digest, closures[1:]) is None
    quiet = replace(config, detectors={**config.detectors, "pii_exposure": DetectorConfig(enabled=False, severity={})})
    assert reusable_spread(earlier, same.rescan, config_digest(quiet), closures) is None
    assert config_digest(replace(config, source="elsewhere/recall.yaml")) == digest  # the same settings


def test_a_kept_blast_radius_follows_the_graph_to_its_new_token(estate, tmp_path, monkeypatch) -> None:
    """An aspect written again unchanged moves the graph's token and changes nothing: the scan after it keeps
    the blast radius, and so does the one after that."""
    config, snapshots, baselines = load().scan, SnapshotStore(tmp_path / "state"), MemoryStateStore()
    runs = _blast_runs(monkeypatch)
    with closing(LiteGraph(estate("general"))) as graph:
        first = run_scan(graph, config, baselines, scanned_at_ms=SCAN_AT_MS, include_all=True, snapshots=snapshots)
        model = first.models[0].closure.urn
        [[aspect]] = [graph.get_aspects([model], [dh.MLModelPropertiesClass])[model].values()]
        graph.emit_mcps([MetadataChangeProposalWrapper(entityUrn=model, aspect=aspect)])
        runs.clear()
        moved = run_scan(graph, config, baselines, scanned_at_ms=SCAN_AT_MS, include_all=True, snapshots=snapshots)
        after = run_scan(graph, config, baselines, scanned_at_ms=SCAN_AT_MS, include_all=True, snapshots=snapshots)
    assert moved.rescan.token != first.rescan.token and moved.rescan.reread == 0
    assert runs == [] and _findings(after) == _findings(first)


def test_a_kept_verdict_is_the_same_at_another_instant_and_under_other_baselines(estate) -> None:
    """What the text of a detector says (the test above) checked against what it does: every detector whose
    verdicts are kept finds the same in each closure sixty days later, and every one kept across baselines the
    same under every column retyped; the ones that are not kept do find something else there."""
    config = load().scan
    with closing(LiteGraph(estate("general"))) as graph:
        closures = resolve_closures(graph, config.resolve, include_all=True)
    recorded = record_baselines(closures, {})
    retyped = {urn: {column: f"not {kind}" for column, kind in columns.items()} for urn, columns in recorded.items()}
    turned: set[str] = set()
    for detector in catalogue.DETECTORS:
        if detector.name == "blast_radius":
            continue  # the second pass: kept by what is at risk (test_the_blast_radius_is_kept_...)
        for closure in closures:
            now = detector.detect(closure, config, DetectorState(at_ms=SCAN_AT_MS, schema_baselines=recorded))
            later = detector.detect(closure, config, DetectorState(at_ms=SCAN_AT_MS + 60 * DAY,
                                                                   schema_baselines=recorded))
            other = detector.detect(closure, config, DetectorState(at_ms=SCAN_AT_MS, schema_baselines=retyped))
            if now != later:
                assert detector.volatile, f"{detector.name} finds otherwise at another instant: it must declare Reads.INSTANT"
                turned.add(detector.name)
            if now != other:
                assert detector.reads_baselines or detector.volatile, \
                    f"{detector.name} finds otherwise under other baselines: it must declare Reads.BASELINES"
                turned.add(detector.name)
    assert {"upstream_staleness", "training_source_schema_drift"} <= turned


def test_a_kept_blast_radius_is_judged_again_where_a_dataset_changed_standing(estate) -> None:
    """Kept closures among others: each keeps its blast radius unless one of its datasets is at risk now and not
    before (or the reverse), or endangers other models; the result is the second pass judged afresh."""
    config = load().scan
    with closing(LiteGraph(estate("general"))) as graph:
        closures = resolve_closures(graph, config.resolve, include_all=True)
    found = catalogue.first_pass(closures, config, record_baselines(closures, {}), at_ms=SCAN_AT_MS)
    before = catalogue.second_pass(closures, found, config, at_ms=SCAN_AT_MS)
    blamed = [(urn, f) for urn, fs in found.items() for f in fs if f.cause in before.spread.at_risk]
    assert blamed, "the estate has a dataset at risk"
    urn, gone = blamed[0]
    fewer = {u: [f for f in fs if f.cause != gone.cause] for u, fs in found.items()}
    kept = frozenset(c.urn for c in closures)
    for now in (fewer, found):
        partly = catalogue.second_pass(closures, now, config, partly=(before.spread, kept), at_ms=SCAN_AT_MS)
        afresh = catalogue.second_pass(closures, now, config, at_ms=SCAN_AT_MS)
        assert partly.findings == afresh.findings and partly.blast_radius == afresh.blast_radius
    assert catalogue.second_pass(closures, fewer, config, at_ms=SCAN_AT_MS).findings != before.findings


def test_a_detector_declaring_what_it_cannot_read_is_refused_when_it_is_declared() -> None:
    """Only a detector judged at the instant can say how long its verdict holds; a misspelt or missing
    declaration fails where the detector is declared, not as a verdict silently kept."""
    from recall_dagster.detect.declared import Detector, Reads
    from recall_dagster.detect.upstream_staleness import detect, holds

    with pytest.raises(TypeError, match="only a detector that reads the instant"):
        Detector("stale_twin", detect, ("stale",), Reads.CLOSURE, holds=holds)
    with pytest.raises(TypeError, match="reads is one of CLOSURE, BASELINES, INSTANT"):
        Detector("stale_twin", detect, ("stale",), "instant")  # type: ignore[arg-type]
    assert Detector("stale_twin", detect, ("stale",), Reads.INSTANT, holds=holds).volatile
