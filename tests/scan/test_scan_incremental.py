"""Incremental rescans: reading again only the models a change reaches gives what a full scan gives."""

from __future__ import annotations

import json
import os
import sqlite3
import tempfile
from contextlib import closing
from pathlib import Path

import datahub.metadata.schema_classes as dh
from click.testing import CliRunner
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scan_estates import SCAN_AT_MS

from recall_dagster.cli import cli
from recall_dagster.estate.resolve import resolve_closures
from recall_dagster.kept.incremental import resolve_incremental
from recall_dagster.graph import LiteGraph
from recall_dagster.kept.baselines import MemoryStateStore
from recall_dagster.config.load import load
from recall_dagster.scan import run_scan
from recall_dagster.kept.snapshots import SnapshotStore
from tests.fuzz.estates import estates

OPTIONS = load().scan.resolve


def _findings(result) -> list[tuple[str, str, str, str, str]]:  # noqa: ANN001 - a ScanResult
    return sorted((m.closure.urn, f.detector, f.subject, f.severity.value, f.message)
                  for m in result.models for f in m.findings)


@settings(max_examples=100, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(estates(), estates(), st.booleans(), st.data())
def test_incremental_closures_equal_a_full_resolve_after_any_change(before, other, include_all, data) -> None:
    """A few aspects of another drawn estate written over the first, once or twice: any entity, any aspect,
    links that meet, loop and dangle. Each rescan must come to exactly the closures a full read gives, and keep
    the far-side links the graph gives now, those of the models it did not read again included."""
    rounds = data.draw(st.lists(st.lists(st.sampled_from(other), max_size=4), min_size=1, max_size=2)) if other \
        else [[]]
    with tempfile.TemporaryDirectory() as scratch, closing(LiteGraph(Path(scratch) / "g.db")) as graph:
        graph.emit_mcps(before)
        _, snapshot, _ = resolve_incremental(graph, OPTIONS, include_all=include_all,
                                             previous=None)
        for change in rounds:
            graph.emit_mcps(change)
            closures, snapshot, rescan = resolve_incremental(
                graph, OPTIONS, include_all=include_all, previous=snapshot)
            assert rescan.mode == "incremental"
            assert closures == resolve_closures(graph, OPTIONS, include_all=include_all)
            links = snapshot.links().whole()
            kept = links.asked
            assert kept == {(r, t): tuple(graph.related([t], r, "incoming")[t]) for r, t in kept}
            _, read, _ = resolve_incremental(graph, OPTIONS, include_all=include_all,
                                             previous=None)
            assert _who_read(links) == _who_read(read.links().whole())


def _who_read(links) -> tuple:  # noqa: ANN001 - Links
    """Which models were read with what choosing them read, and who read each entity, in any order."""
    return dict(links.models_read), {e: set(m) for e, m in links.readers_of.items()}



def _version(name: str, *, groups: list[str], version_set: str, aliases: list[str], run: str = "") -> list:
    urn = f"urn:li:mlModel:(urn:li:dataPlatform:mlflow,{name},PROD)"
    return _mcps(urn, dh.MLModelPropertiesClass(groups=groups, trainingJobs=[run] if run else []),
                 dh.VersionPropertiesClass(versionSet=version_set, version=dh.VersionTagClass(name[-1]),
                                           sortId=name[-1], aliases=[dh.VersionTagClass(a) for a in aliases]))


def test_a_version_read_again_reads_the_production_versions_of_every_group_it_is_in() -> None:
    """The change reaches one version of a registered model; a second version of that model is read with it,
    and it also sits in a version set whose production version no change reached: that one is read too, or
    the second version's production versions would lose it (found by the property test above)."""
    dataset = "urn:li:dataset:(urn:li:dataPlatform:postgres,raw.orders,PROD)"
    group, version_set = "urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,fraud,PROD)", "urn:li:versionSet:(x,mlModel)"
    estate = [
        *_mcps("urn:li:dataProcessInstance:run-1", dh.DataProcessInstanceInputClass(inputs=[dataset])),
        *_version("fraud_1", groups=[group], version_set="urn:li:versionSet:(y,mlModel)", aliases=[],
                  run="urn:li:dataProcessInstance:run-1"),
        *_version("churn_2", groups=[group], version_set=version_set, aliases=[]),
        *_version("churn_3", groups=[], version_set=version_set, aliases=["production"]),
    ]
    with tempfile.TemporaryDirectory() as scratch, closing(LiteGraph(Path(scratch) / "g.db")) as graph:
        graph.emit_mcps(estate)
        _, snapshot, _ = resolve_incremental(graph, OPTIONS, include_all=True, previous=None)
        graph.emit_mcps([_schema(dataset, "text")])
        closures, _, rescan = resolve_incremental(graph, OPTIONS, include_all=True,
                                                  previous=snapshot)
        assert (rescan.mode, rescan.reread) == ("incremental", 3)
        assert closures == resolve_closures(graph, OPTIONS, include_all=True)
        churn_2 = next(c for c in closures if c.model.name == "churn_2")
        assert churn_2.production_versions == ("urn:li:mlModel:(urn:li:dataPlatform:mlflow,churn_3,PROD)",)


SOLE_OWNER = "urn:li:corpuser:owns.one.model"


def _mcps(urn: str, *aspects) -> list[MetadataChangeProposalWrapper]:  # noqa: ANN002 - SDK aspects
    return [MetadataChangeProposalWrapper(entityUrn=urn, aspect=a) for a in aspects]


def _edits(closures) -> dict[str, list[MetadataChangeProposalWrapper]]:  # noqa: ANN001 - ModelClosures
    """One edit of each kind a closure depends on, each on the far side of a link: an entity a closure
    names changes and what it points at does not, or a new entity points at what a closure holds."""
    datasets = [(u, d) for c in closures for u, d in c.datasets.items()]
    person = next(o.urn for _, d in datasets for o in d.owners if o.active)
    assertion = next(a.urn for _, d in datasets for a in d.assertions)
    table = next(t.urn for c in closures for t in c.feature_tables if t.features)
    term = next(t.urn for _, d in datasets for t in (*d.terms, *(t for f in d.fields or () for t in f.terms)))
    gone = "urn:li:dataset:(urn:li:dataPlatform:postgres,nowhere.at_all,PROD)"
    leaving = next(c.model for c in closures if c.model.groups)
    group, version_set = (next(g for g in leaving.groups if g.startswith(prefix))
                          for prefix in ("urn:li:mlModelGroup:", "urn:li:versionSet:"))
    feature = closures[0].features[0].urn
    joining = "urn:li:mlModel:(urn:li:dataPlatform:sagemaker,spend_model_{},PROD)"
    production = dh.GlobalTagsClass(tags=[dh.TagAssociationClass("urn:li:tag:mlflow_production")])
    return {
        "a dataset's owner left": _mcps(person, dh.CorpUserInfoClass(active=False)),
        "a model's owner left": _mcps(SOLE_OWNER, dh.CorpUserInfoClass(active=False)),
        "an assertion moved to another dataset": _mcps(assertion, dh.AssertionInfoClass(
            type="DATASET", datasetAssertion=dh.DatasetAssertionInfoClass(
                dataset=gone, scope="DATASET_ROWS", operator="NOT_NULL"))),
        "a new assertion on a dataset": _mcps("urn:li:assertion:new", dh.AssertionInfoClass(
            type="DATASET", datasetAssertion=dh.DatasetAssertionInfoClass(
                dataset=datasets[0][0], scope="DATASET_ROWS", operator="NOT_NULL"))),
        "a feature table dropped its features": _mcps(table, dh.MLFeatureTablePropertiesClass(mlFeatures=[])),
        "a new feature table serves a feature": _mcps("urn:li:mlFeatureTable:(urn:li:dataPlatform:feast,new)",
                                                      dh.MLFeatureTablePropertiesClass(mlFeatures=[feature])),
        "a glossary term was renamed": _mcps(term, dh.GlossaryTermInfoClass(
            definition="", termSource="INTERNAL", name="Renamed")),
        "a version left its registered model": _mcps(leaving.urn, dh.MLModelPropertiesClass(
            mlFeatures=list(leaving.features), trainingJobs=list(leaving.training_runs),
            deployments=list(leaving.deployments), groups=[])),
        "a production version joined a registered model": _mcps(
            joining.format(3), dh.MLModelPropertiesClass(groups=[group]), production),
        "a production version joined a version set": _mcps(joining.format(4), dh.VersionPropertiesClass(
            versionSet=version_set, version=dh.VersionTagClass("4"), sortId="4",
            aliases=[dh.VersionTagClass("production")])),
    }


def test_a_change_on_the_far_side_of_a_link_reaches_the_closures_that_name_it(estate) -> None:
    """Each edit changes an entity a closure names without touching what it points at: the closures that
    named it are read again, and agree with a full read."""
    path = estate("general")
    with closing(LiteGraph(path)) as graph:
        owned = graph.list_urns("mlModel")[0]
        graph.emit_mcps([MetadataChangeProposalWrapper(entityUrn=owned, aspect=dh.OwnershipClass(
            owners=[dh.OwnerClass(owner=SOLE_OWNER, type="TECHNICAL_OWNER")]))])
        before = resolve_closures(graph, OPTIONS, include_all=True)
        edits = _edits(before)
    for kind, edit in edits.items():
        copy = path.with_name(f"{len(kind)}.db")
        copy.write_bytes(path.read_bytes())
        with closing(LiteGraph(copy)) as graph:
            _, snapshot, _ = resolve_incremental(graph, OPTIONS, include_all=True,
                                                 previous=None)
            graph.emit_mcps(edit)
            closures, _, rescan = resolve_incremental(graph, OPTIONS, include_all=True,
                                                      previous=snapshot)
            full = resolve_closures(graph, OPTIONS, include_all=True)
            assert full != before, f"{kind}: the edit changed nothing a closure holds"
            assert (rescan.mode, closures) == ("incremental", full), kind


def _schema(urn: str, native_type: str) -> MetadataChangeProposalWrapper:
    field = dh.SchemaFieldClass(fieldPath="amount", type=dh.SchemaFieldDataTypeClass(dh.NumberTypeClass()),
                                nativeDataType=native_type)
    return MetadataChangeProposalWrapper(entityUrn=urn, aspect=dh.SchemaMetadataClass(
        schemaName=urn, platform="urn:li:dataPlatform:postgres", version=0, hash="",
        platformSchema=dh.OtherSchemaClass(rawSchema=""), fields=[field]))


def test_a_rescan_reads_again_only_the_versions_whose_closures_hold_the_changed_dataset(estate, tmp_path) -> None:
    """And the other versions of their registered models, whose production versions are read together."""
    path, config = estate("general"), load().scan
    snapshots, baselines = SnapshotStore(tmp_path / "state"), MemoryStateStore()
    with closing(LiteGraph(path)) as graph:
        first = run_scan(graph, config, baselines, scanned_at_ms=SCAN_AT_MS, include_all=True, snapshots=snapshots)
        assert first.rescan.mode == "full" and first.rescan.reason == "no earlier scan of this graph to start from"
        changed, reach = min(
            ((u, {m.closure.urn for m in first.models if u in m.closure.datasets})
             for m in first.models for u in m.closure.datasets),
            key=lambda pair: (len(pair[1]), pair[0]),
        )
        groups = {g for m in first.models if m.closure.urn in reach for g in m.closure.model.groups}
        reread = {m.closure.urn for m in first.models if m.closure.urn in reach or groups & set(m.closure.model.groups)}
        assert len(reread) < len(first.models)

        graph.emit_mcps([_schema(changed, "text")])
        later = SCAN_AT_MS + 3_600_000  # an hour on: freshness is judged anew for every model
        again = run_scan(graph, config, baselines, scanned_at_ms=later, include_all=True, snapshots=snapshots)
        assert again.rescan.contract().as_json() == {
            "mode": "incremental", "reason": "1 entity changed since the last scan", "changed_entities": 1,
            "models_reread": len(reread), "models_reused": len(first.models) - len(reread),
        }
        full = run_scan(graph, config, MemoryStateStore(baselines.baselines), scanned_at_ms=later, include_all=True)
        assert _findings(again) == _findings(full)

        same = run_scan(graph, config, baselines, scanned_at_ms=later, include_all=True, snapshots=snapshots)
        assert (same.rescan.reread, same.rescan.reused) == (0, len(first.models))
        assert _findings(same) == _findings(full)


def test_a_snapshot_that_cannot_be_trusted_costs_a_full_rescan_not_an_error(estate, tmp_path) -> None:
    path, config = estate("general"), load().scan
    snapshots = SnapshotStore(tmp_path / "state")
    with closing(LiteGraph(path)) as graph:
        first = run_scan(graph, config, MemoryStateStore(), scanned_at_ms=SCAN_AT_MS, snapshots=snapshots)
        [kept] = [p for p in snapshots.folder.glob("*.pickle") if p.name.count(".") == 1]  # not verdicts
        kept.write_bytes(b"not a snapshot")
        damaged = run_scan(graph, config, MemoryStateStore(), scanned_at_ms=SCAN_AT_MS, snapshots=snapshots)
        assert damaged.rescan.mode == "full" and _findings(damaged) == _findings(first)
        asked = run_scan(graph, config, MemoryStateStore(), scanned_at_ms=SCAN_AT_MS, snapshots=snapshots, full=True)
        assert asked.rescan.reason == "a full rescan was asked for"
        every = run_scan(graph, config, MemoryStateStore(), scanned_at_ms=SCAN_AT_MS, snapshots=snapshots,
                         include_all=True)
        assert every.rescan.reason == "no earlier scan of this graph to start from"  # another selection


def test_the_links_are_read_only_to_follow_a_change_and_a_lost_one_costs_a_full_read(estate, tmp_path) -> None:
    path, config = estate("general"), load().scan
    snapshots = SnapshotStore(tmp_path / "state")
    with closing(LiteGraph(path)) as graph:
        first = run_scan(graph, config, MemoryStateStore(), scanned_at_ms=SCAN_AT_MS, snapshots=snapshots)
        [links] = snapshots.folder.glob("*.links.sqlite")
        links.unlink()
        same = run_scan(graph, config, MemoryStateStore(), scanned_at_ms=SCAN_AT_MS, snapshots=snapshots)
        assert same.rescan.reason == "nothing changed since the last scan" and _findings(same) == _findings(first)
        changed = next(iter(first.models[0].closure.datasets))
        graph.emit_mcps([_schema(changed, "text")])
        again = run_scan(graph, config, MemoryStateStore(), scanned_at_ms=SCAN_AT_MS, snapshots=snapshots)
        full = run_scan(graph, config, MemoryStateStore(), scanned_at_ms=SCAN_AT_MS)
    assert (again.rescan.mode, again.rescan.reason) == ("full", "the last scan's snapshot is incomplete")
    assert _findings(again) == _findings(full) and links.exists()


def test_a_graph_rewritten_in_place_is_read_in_full(estate) -> None:
    """Rows deleted behind DataHub's back: the token no longer names the graph, so nothing is trusted."""
    path = estate("general")
    with closing(LiteGraph(path)) as graph:
        token = graph.changes_since(None).token
        assert graph.changes_since(token).urns == frozenset()
    with closing(sqlite3.connect(path)) as db:
        db.execute("DELETE FROM metadata_aspect_v2 WHERE rowid = (SELECT max(rowid) FROM metadata_aspect_v2)")
        db.commit()
    with closing(LiteGraph(path)) as graph:
        assert graph.changes_since(token).urns is None


def _commit_a_row_behind_datahubs_back(db: sqlite3.Connection) -> None:
    """A copy of the first aspect row under another version, committed by a plain SQLite client."""
    db.execute("INSERT INTO metadata_aspect_v2 (urn, aspect_name, version, metadata, system_metadata, createdon) "
               "SELECT urn, aspect_name, 99, metadata, system_metadata, createdon FROM metadata_aspect_v2 "
               "WHERE rowid = (SELECT min(rowid) FROM metadata_aspect_v2)")
    db.commit()


def test_a_write_that_keeps_the_files_size_and_time_is_still_seen(estate) -> None:
    """An unchanged file is trusted without counting its rows; a row committed behind DataHub's back that
    leaves the file's size and modification time as they were still counts as a change (SQLite's header
    counts every commit)."""
    path = estate("general")
    with closing(LiteGraph(path)) as graph:
        token = graph.changes_since(None).token
        assert graph.changes_since(token).urns == frozenset()
    before = path.stat()
    with closing(sqlite3.connect(path)) as db:
        _commit_a_row_behind_datahubs_back(db)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size and path.stat().st_mtime_ns == before.st_mtime_ns
    with closing(LiteGraph(path)) as graph:
        assert graph.changes_since(token).urns


def test_a_graph_in_wal_mode_is_asked_every_time(estate) -> None:
    """In WAL mode writes land in the -wal file and SQLite's header may not count them: the rows are asked."""
    path = estate("general")
    with closing(sqlite3.connect(path)) as db:
        db.execute("PRAGMA journal_mode=WAL")
    with closing(LiteGraph(path)) as graph:
        token = graph.changes_since(None).token
        assert graph.changes_since(token).urns == frozenset()
    with closing(sqlite3.connect(path)) as db:
        _commit_a_row_behind_datahubs_back(db)
        with closing(LiteGraph(path)) as graph:
            assert graph.changes_since(token).urns


def test_recall_scan_says_how_it_read_the_closures(estate, tmp_path) -> None:
    env = {"RECALL_HOME": str(tmp_path / "home"), "RECALL_GRAPH": str(estate("general")),
           "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'no-mlflow.db'}"}
    args = ["scan", "--all", "--no-measure", "--as-of", "2025-06-01T00:00:00Z"]
    first = CliRunner().invoke(cli, [*args, "--json"], env=env)
    second = CliRunner().invoke(cli, [*args, "--json"], env=env)
    text = CliRunner().invoke(cli, [*args, "--full"], env=env)
    assert json.loads(first.output)["resolve"]["mode"] == "full"
    resolved = json.loads(second.output)["resolve"]
    assert resolved["mode"] == "incremental" and resolved["models_reread"] == 0 and resolved["models_reused"] > 0
    assert {k: v for k, v in json.loads(first.output).items() if k != "resolve"} == \
        {k: v for k, v in json.loads(second.output).items() if k != "resolve"}
    assert "Closures: read in full: a full rescan was asked for" in text.output


def test_an_empty_graph_rescans_to_nothing() -> None:
    with tempfile.TemporaryDirectory() as scratch, closing(LiteGraph(Path(scratch) / "g.db")) as graph:
        closures, snapshot, _ = resolve_incremental(graph, OPTIONS, include_all=True, previous=None)
        assert closures == [] and snapshot.closures == {}
        again, _, rescan = resolve_incremental(graph, OPTIONS, include_all=True, previous=snapshot)
        assert again == [] and rescan.contract().as_json() == {
            "mode": "incremental", "reason": "nothing changed since the last scan", "changed_entities": 0,
            "models_reread": 0, "models_reused": 0}
