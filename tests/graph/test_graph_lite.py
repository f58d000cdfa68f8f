"""LiteGraph reads and writes the same file DataHub's own CLI and ingestion use."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path
from typing import Iterator

import pytest
from datahub.api.entities.dataprocess.dataprocess_instance import DataProcessInstance
from datahub.emitter.aspect import JSON_PATCH_CONTENT_TYPE
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.ingestion.run.pipeline import Pipeline
from datahub.metadata.schema_classes import (
    AssertionResultClass,
    AssertionResultTypeClass,
    AssertionRunEventClass,
    AssertionRunStatusClass,
    ChangeTypeClass,
    DataProcessInstanceInputClass,
    DataProcessInstanceRunEventClass,
    DataProcessRunStatusClass,
    GenericAspectClass,
    MetadataChangeProposalClass,
    MLFeaturePropertiesClass,
    MLModelPropertiesClass,
    OperationClass,
    StatusClass,
    UpstreamClass,
    UpstreamLineageClass,
)
from datahub.specific.dataset import DatasetPatchBuilder
from datahub.utilities.urns.dataset_urn import DatasetUrn
from graph_estate import Estate

from recall_dagster.errors import GraphError
from recall_dagster.estate.parse import RUN_FIELDS
from recall_dagster.graph import LiteGraph, MetadataGraph, open_graph
from recall_dagster.graph.port import values_at

# The SDK's Lite engine calls its own deprecated URN helpers on every write.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:datahub.lite.sql_backed_lite")



@pytest.fixture
def graph_file(tmp_path: Path, estate: Estate) -> Path:
    path = tmp_path / "graph" / "datahub.db"
    with closing(LiteGraph(path)) as graph:
        report = graph.emit_mcps(estate.mcps())
    assert report.ok and report.written == len(estate.mcps())
    return path


@pytest.fixture
def graph(graph_file: Path) -> Iterator[LiteGraph]:
    with closing(LiteGraph(graph_file, read_only=True)) as opened:
        yield opened


def test_is_a_metadata_graph(graph: LiteGraph, graph_file: Path) -> None:
    assert isinstance(graph, MetadataGraph)
    assert graph.location == str(graph_file)


def test_get_aspects_batched_typed_and_dangling_empty(graph: LiteGraph, estate: Estate) -> None:
    dangling = "urn:li:mlFeature:(order_features,never_written)"
    statements: list[str] = []
    graph._lite.sqlite_client.set_trace_callback(statements.append)  # type: ignore[union-attr]

    found = graph.get_aspects([estate.model, estate.total, dangling, estate.mart])

    assert len([s for s in statements if "metadata_aspect_v2" in s]) == 1
    assert set(found) == {estate.model, estate.total, dangling, estate.mart}
    assert found[dangling] == {}
    model = found[estate.model]["mlModelProperties"]
    assert isinstance(model, MLModelPropertiesClass) and model.mlFeatures == [estate.total, estate.count]
    assert isinstance(found[estate.mart]["upstreamLineage"], UpstreamLineageClass)

    only = graph.get_aspects([estate.raw, estate.total], [StatusClass])
    assert only == {estate.raw: {"status": StatusClass(removed=False)}, estate.total: {}}


def test_timeseries_aspects_are_not_read_as_latest_values(graph: LiteGraph, estate: Estate) -> None:
    with pytest.raises(ValueError, match="timeseries"):
        graph.get_aspects([estate.raw], [OperationClass])


@pytest.mark.parametrize(
    ("source", "relationship", "targets"),
    [
        ("model", "Consumes", ["total", "count"]),
        ("model", "DeployedTo", ["deployment"]),
        ("model", "TrainedBy", ["run"]),
        ("model", "MemberOf", ["group"]),
        ("count", "DerivedFrom", ["mart", "raw"]),
        ("table", "Contains", ["total", "count"]),
        ("run", "Consumes", ["raw"]),
        ("run", "DataProcessInstanceConsumes", ["mart"]),
        ("mart", "DownstreamOf", ["raw"]),
        ("raw", "DownstreamOf", []),
    ],
)
def test_related_outgoing(
    graph: LiteGraph, estate: Estate, source: str, relationship: str, targets: list[str]
) -> None:
    urn = getattr(estate, source)
    assert graph.related([urn], relationship) == {urn: [getattr(estate, t) for t in targets]}


def test_related_incoming(graph: LiteGraph, estate: Estate) -> None:
    consumers = graph.related([estate.total, estate.raw, estate.mart], "Consumes", "incoming")
    # The same name on two aspects: the model's features and the run's legacy inputs.
    assert consumers == {estate.total: [estate.model], estate.raw: [estate.run], estate.mart: []}
    assert graph.related([estate.mart], "DerivedFrom", "incoming") == {
        estate.mart: sorted([estate.total, estate.count])
    }
    assert graph.related([estate.count], "Contains", "incoming") == {estate.count: [estate.table]}
    assert graph.related([estate.raw], "DownstreamOf", "incoming") == {estate.raw: [estate.mart]}
    assert graph.related([estate.mart], "DataProcessInstanceConsumes", "incoming") == {
        estate.mart: [estate.run]
    }


def test_related_incoming_matches_whole_urns_whatever_their_escaping(tmp_path: Path) -> None:
    odd = 'urn:li:dataset:(urn:li:dataPlatform:postgres,shop."Ünïcode"\\tab\tle,PROD)'  # stored escaped
    plain = "urn:li:dataset:(urn:li:dataPlatform:postgres,shop.orders,PROD)"
    longer = "urn:li:dataset:(urn:li:dataPlatform:postgres,shop.orders_v2,PROD)"
    features = [f"urn:li:mlFeature:(shop,f{i})" for i in range(3)]
    aspects = [
        MLFeaturePropertiesClass(sources=[odd]),
        MLFeaturePropertiesClass(sources=[longer]),
        MLFeaturePropertiesClass(description=f"once read {plain}"),  # named inside a text, not a source
    ]
    with closing(LiteGraph(tmp_path / "g.db")) as graph:
        assert graph.emit_mcps(
            [MetadataChangeProposalWrapper(entityUrn=f, aspect=a) for f, a in zip(features, aspects)]
        ).ok
        found = graph.related([odd, plain, longer], "DerivedFrom", "incoming")
    assert found == {odd: [features[0]], plain: [], longer: [features[1]]}


def test_list_urns_sorted_without_soft_deleted(graph: LiteGraph, estate: Estate) -> None:
    assert graph.list_urns("dataset") == sorted([estate.raw, estate.mart])
    assert graph.list_urns("mlFeature") == sorted([estate.total, estate.count])
    assert graph.list_urns("mlModelGroup") == []


def _operation(at: int) -> OperationClass:
    return OperationClass(timestampMillis=at, lastUpdatedTimestamp=at, operationType="INSERT")


def _assertion_run(at: int, result: str) -> AssertionRunEventClass:
    return AssertionRunEventClass(
        timestampMillis=at,
        runId=f"run-{at}",
        asserteeUrn="urn:li:dataset:(urn:li:dataPlatform:postgres,shop.raw.orders,PROD)",
        assertionUrn="urn:li:assertion:not-null-order-id",
        status=AssertionRunStatusClass.COMPLETE,
        result=AssertionResultClass(type=result),
    )


def test_timeseries_newest_first_whatever_the_write_order(tmp_path: Path, estate: Estate) -> None:
    assertion = "urn:li:assertion:not-null-order-id"
    with closing(LiteGraph(tmp_path / "g.db")) as graph:
        report = graph.emit_mcps(
            [MetadataChangeProposalWrapper(entityUrn=estate.raw, aspect=_operation(t)) for t in (2000, 1000, 3000, 2000)]
            + [
                MetadataChangeProposalWrapper(entityUrn=assertion, aspect=_assertion_run(t, r))
                for t, r in ((10, AssertionResultTypeClass.SUCCESS), (30, AssertionResultTypeClass.FAILURE), (20, AssertionResultTypeClass.SUCCESS))
            ]
        )
        assert report.ok
        ops = graph.timeseries([estate.raw, estate.mart], OperationClass)
        operations, none = ops[estate.raw], ops[estate.mart]
        runs = graph.timeseries([assertion], AssertionRunEventClass, limit=2)[assertion]

    # Rewriting the 2000 event is one event, not two; version 0 (last written) is not "latest".
    assert [op.timestampMillis for op in operations] == [3000, 2000, 1000]
    assert [(r.timestampMillis, r.result.type) for r in runs] == [(30, "FAILURE"), (20, "SUCCESS")]  # type: ignore[union-attr]
    assert none == []


def test_timeseries_values_are_what_the_whole_events_hold(tmp_path: Path) -> None:
    """Values read by SQLite equal those of the decoded events, also for an event stored in the union-keyed
    form other writers use, for absent results, and after an event was written twice."""
    assertion = "urn:li:assertion:not-null-order-id"
    events = [
        _assertion_run(10, AssertionResultTypeClass.SUCCESS),
        AssertionRunEventClass(
            timestampMillis=20, runId="run-20", asserteeUrn="urn:li:dataset:x", assertionUrn=assertion,
            status=AssertionRunStatusClass.COMPLETE,
            result=AssertionResultClass(type=AssertionResultTypeClass.FAILURE, unexpectedCount=7,
                                        actualAggValue=7.0, nativeResults={"message": "7 rows"}),
        ),
        AssertionRunEventClass(timestampMillis=30, runId="run-30", asserteeUrn="urn:li:dataset:x",
                               assertionUrn=assertion, status=AssertionRunStatusClass.COMPLETE),
        _assertion_run(10, AssertionResultTypeClass.SUCCESS),
    ]
    with closing(LiteGraph(tmp_path / "g.db")) as graph:
        assert graph.emit_mcps([MetadataChangeProposalWrapper(entityUrn=assertion, aspect=e) for e in events]).ok
    with closing(sqlite3.connect(tmp_path / "g.db")) as db, db:
        keyed = json.dumps({"timestampMillis": 40, "runId": "run-40", "asserteeUrn": "urn:li:dataset:x",
                            "assertionUrn": assertion, "status": "COMPLETE", "result": {
                                "com.linkedin.assertion.AssertionResult": {"type": "ERROR"}}})
        db.execute("INSERT INTO metadata_aspect_v2 (urn, aspect_name, version, metadata, createdon) "
                   "VALUES (?, 'assertionRunEvent', 99, ?, 0)", [assertion, keyed])
    with closing(LiteGraph(tmp_path / "g.db", read_only=True)) as graph:
        for limit in (2, 20):
            whole = graph.timeseries([assertion], AssertionRunEventClass, limit=limit)[assertion]
            values = graph.timeseries_values([assertion], AssertionRunEventClass, RUN_FIELDS, limit=limit)
            assert values[assertion] == [values_at(e, RUN_FIELDS) for e in whole]
        assert values[assertion] == [(40, "ERROR", None, None, None), (30, None, None, None, None),
                                     (20, "FAILURE", 7, {"message": "7 rows"}, 7.0),
                                     (10, "SUCCESS", None, None, None)]
        assert graph.timeseries_values([assertion], AssertionRunEventClass, ["timestampMillis"], limit=1) == {
            assertion: [(40,)]}
        with pytest.raises(ValueError, match="no field result.kind"):
            graph.timeseries_values([assertion], AssertionRunEventClass, ["result.kind"])


def test_a_timeseries_value_the_schema_refuses_is_a_graph_error(tmp_path: Path) -> None:
    assertion = "urn:li:assertion:not-null-order-id"
    with closing(LiteGraph(tmp_path / "g.db")) as graph:
        aspect = _assertion_run(10, AssertionResultTypeClass.SUCCESS)
        assert graph.emit_mcps([MetadataChangeProposalWrapper(entityUrn=assertion, aspect=aspect)]).ok
    with closing(sqlite3.connect(tmp_path / "g.db")) as db, db:
        db.execute("UPDATE metadata_aspect_v2 SET metadata = replace(metadata, 'SUCCESS', 'GREAT') "
                   "WHERE aspect_name = 'assertionRunEvent'")
    with closing(LiteGraph(tmp_path / "g.db", read_only=True)) as graph:
        with pytest.raises(GraphError, match=r"assertionRunEvent of urn:li:assertion:not-null-order-id .*result.type"):
            graph.timeseries_values([assertion], AssertionRunEventClass, RUN_FIELDS)


def test_sdk_emitter_helpers_write_into_the_graph(tmp_path: Path, estate: Estate) -> None:
    run = DataProcessInstance(id="train-42", orchestrator="mlflow", inlets=[DatasetUrn.from_string(estate.raw)])
    outcomes: list[str] = []
    with closing(LiteGraph(tmp_path / "g.db")) as graph:
        run.emit(graph, callback=lambda err, msg: outcomes.append(msg))
        run.emit_process_start(graph, start_timestamp_millis=1_000, emit_template=False)
        run.emit_process_end(graph, end_timestamp_millis=5_000, result="SUCCESS", result_type="mlflow")
        graph.flush()

        urn = str(run.urn)
        inputs = graph.get_aspects([urn], [DataProcessInstanceInputClass])[urn]["dataProcessInstanceInput"]
        events = graph.timeseries([urn], DataProcessInstanceRunEventClass)[urn]
        consumers = graph.related([estate.raw], "Consumes", "incoming")

    assert outcomes and set(outcomes) == {"success"}
    assert inputs.inputs == [estate.raw]  # type: ignore[attr-defined]
    assert [e.status for e in events] == [DataProcessRunStatusClass.COMPLETE, DataProcessRunStatusClass.STARTED]
    assert consumers == {estate.raw: [urn]}


def _version_count(path: Path, urn: str, aspect_name: str) -> int:
    with closing(sqlite3.connect(path)) as con:
        return con.execute(
            "SELECT count(*) FROM metadata_aspect_v2 WHERE urn = ? AND aspect_name = ?", [urn, aspect_name]
        ).fetchone()[0]


def test_patches_are_merged_into_the_stored_aspect(tmp_path: Path, estate: Estate) -> None:
    path = tmp_path / "g.db"
    patch = DatasetPatchBuilder(estate.mart).add_upstream_lineage(
        UpstreamClass(dataset=estate.retired, type="COPY")
    )
    outcomes: list[str] = []
    with closing(LiteGraph(path)) as graph:
        assert graph.emit_mcps(estate.mcps()).ok
        for proposal in patch.build():
            graph.emit(proposal, callback=lambda err, msg: outcomes.append(msg))
        versions = _version_count(path, estate.mart, "upstreamLineage")
        again = graph.emit_mcps(patch.build())  # type: ignore[arg-type]  # raw proposals are written too
        lineage = graph.get_aspects([estate.mart], [UpstreamLineageClass])[estate.mart]["upstreamLineage"]
        upstreams = graph.related([estate.mart], "DownstreamOf")

    assert outcomes == ["success"] and again.ok and again.written == 1
    assert [u.dataset for u in lineage.upstreams] == [estate.raw, estate.retired]  # type: ignore[attr-defined]
    assert upstreams == {estate.mart: [estate.raw, estate.retired]}
    assert _version_count(path, estate.mart, "upstreamLineage") == versions  # re-applying changed nothing


def test_what_cannot_be_patched_is_refused_with_the_reason(tmp_path: Path, estate: Estate) -> None:
    whole_aspect = MetadataChangeProposalWrapper(
        entityUrn=estate.model, aspect=StatusClass(removed=True), changeType=ChangeTypeClass.PATCH
    )
    into_unkeyed_array = MetadataChangeProposalClass(
        entityType="mlModel",
        entityUrn=estate.model,
        changeType=ChangeTypeClass.PATCH,
        aspectName="mlModelProperties",
        aspect=GenericAspectClass(
            value=json.dumps([{"op": "add", "path": f"/mlFeatures/{estate.total}", "value": estate.total}]).encode(),
            contentType=JSON_PATCH_CONTENT_TYPE,
        ),
    )
    errors: list[Exception] = []
    with closing(LiteGraph(tmp_path / "g.db")) as graph:
        assert graph.emit_mcps(estate.mcps()).ok
        before = graph.get_aspects([estate.model])
        with pytest.raises(GraphError, match="UPSERT"):
            graph.emit(whole_aspect, callback=lambda err, msg: errors.append(err))
        report = graph.emit_mcps([into_unkeyed_array])  # type: ignore[list-item]
        assert graph.get_aspects([estate.model]) == before
    assert len(errors) == 1
    assert report.written == 0
    urn, aspect_name, reason = report.failures[0]
    assert (urn, aspect_name) == (estate.model, "mlModelProperties")
    assert f"mlModelProperties: cannot add /mlFeatures/{estate.total}: 'mlFeatures' is an array" in reason


def test_failed_proposals_are_reported_and_the_rest_written(tmp_path: Path, estate: Estate) -> None:
    bad = MetadataChangeProposalWrapper(
        entityUrn=estate.total, aspect=MLFeaturePropertiesClass(), changeType=ChangeTypeClass.DELETE
    )
    good = estate.mcps()[:2]
    with closing(LiteGraph(tmp_path / "g.db")) as graph:
        report = graph.emit_mcps([good[0], bad, good[1]])
        assert graph.list_urns("dataset") == sorted([estate.raw, estate.mart])
    assert report.written == 2 and not report.ok
    assert report.failures[0][:2] == (estate.total, "mlFeatureProperties")


def test_read_only_graph_refuses_writes(graph: LiteGraph, estate: Estate) -> None:
    report = graph.emit_mcps(estate.mcps()[:1])
    assert report.written == 0 and "read-only" in report.failures[0][2]


def test_unusable_files_raise_graph_error_with_a_message(tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(os.urandom(4096))
    duck = tmp_path / "lite.duckdb"
    duck.write_bytes(b"\0" * 8 + b"DUCK" + b"\0" * 4084)
    other = tmp_path / "mlflow.db"
    with closing(sqlite3.connect(other)) as con:
        con.execute("CREATE TABLE experiments (id INTEGER)")
    damaged = tmp_path / "damaged.db"
    damaged.write_bytes(b"SQLite format 3\x00" + os.urandom(4080))

    cases = [
        (tmp_path / "missing.db", True, "does not exist"),
        (junk, False, "not a SQLite database"),
        (duck, True, "DuckDB"),
        (other, False, "not a DataHub Lite graph"),
        (damaged, True, "damaged"),
    ]
    for path, read_only, message in cases:
        with pytest.raises(GraphError, match=message) as caught:
            open_graph(str(path), read_only=read_only)
        assert str(path) in str(caught.value) and "\n" not in str(caught.value)
    assert not (tmp_path / "missing.db").exists()


@pytest.mark.slow  # the embedded stack for seconds each: `make test-slow`
def test_official_datahub_lite_cli_reads_what_was_written(graph_file: Path, estate: Estate, lite_cli) -> None:
    datahub = lite_cli(graph_file)
    model = json.loads(datahub("lite", "get", "--urn", estate.model))
    assert model["urn"] == estate.model
    assert model["mlModelProperties"]["mlFeatures"] == [estate.total, estate.count]

    listing = datahub("lite", "ls", "/").split()
    assert "databases" in listing


def test_graph_filled_by_datahub_ingest_is_read(tmp_path: Path, estate: Estate, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("DATAHUB_TELEMETRY_ENABLED", "false")
    proposals = [
        {
            "entityType": "mlFeature",
            "entityUrn": estate.total,
            "changeType": "UPSERT",
            "aspectName": "mlFeatureProperties",
            "aspect": {"json": {"sources": [estate.mart], "dataType": "CONTINUOUS"}},
        },
        {
            "entityType": "dataset",
            "entityUrn": estate.mart,
            "changeType": "UPSERT",
            "aspectName": "upstreamLineage",
            "aspect": {"json": {"upstreams": [{"dataset": estate.raw, "type": "TRANSFORMED", "auditStamp": {"time": 0, "actor": "urn:li:corpuser:unknown"}}]}},
        },
        *(
            {
                "entityType": "dataset",
                "entityUrn": estate.mart,
                "changeType": "UPSERT",
                "aspectName": "operation",
                "aspect": {"json": {"timestampMillis": at, "lastUpdatedTimestamp": at, "operationType": "UPDATE"}},
            }
            for at in (7000, 9000, 8000)
        ),
    ]
    source = tmp_path / "mcps.json"
    source.write_text(json.dumps(proposals))
    target = tmp_path / "ingested.db"
    pipeline = Pipeline.create(
        {
            "source": {"type": "file", "config": {"path": str(source)}},
            "sink": {"type": "datahub-lite", "config": {"type": "sqlite", "config": {"file": str(target)}}},
        }
    )
    pipeline.run()
    pipeline.raise_from_status()

    with closing(open_graph(str(target), read_only=True)) as graph:
        assert graph.related([estate.total], "DerivedFrom") == {estate.total: [estate.mart]}
        assert graph.related([estate.raw], "DownstreamOf", "incoming") == {estate.raw: [estate.mart]}
        assert [op.timestampMillis for op in graph.timeseries([estate.mart], OperationClass)[estate.mart]] == [9000, 8000, 7000]
        assert graph.list_urns("mlFeature") == [estate.total]


KILLED_MID_WRITE = """
import os, signal, sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA cache_size=1")  # spill to the file at once: the journal is hot when the process dies
conn.execute("BEGIN")
conn.execute("UPDATE metadata_aspect_v2 SET metadata = metadata || ' '")
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_write_killed_part_way_is_rolled_back_not_called_damaged(graph_file: Path, estate: Estate) -> None:
    """SIGKILL in the middle of a write leaves a hot journal; the next open, even a read-only one, reads the
    graph as it was before that write."""
    with closing(LiteGraph(graph_file, read_only=True)) as before:
        urns = before.list_urns("dataset")
    subprocess.run([sys.executable, "-c", KILLED_MID_WRITE, str(graph_file)], check=False)
    journal = graph_file.with_name(graph_file.name + "-journal")
    assert journal.exists() and journal.stat().st_size > 0, "the kill left a hot journal"
    with closing(LiteGraph(graph_file, read_only=True)) as after:
        assert after.list_urns("dataset") == urns
    assert not journal.exists(), "rolled back"
