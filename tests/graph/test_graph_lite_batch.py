"""A batch of proposals leaves the Lite file exactly as the SDK's one-at-a-time ``SqliteLite.write`` does."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from itertools import count
from pathlib import Path
from types import SimpleNamespace

import datahub.lite.sql_backed_lite
import pytest
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.lite.sqlite_lite import SqliteLite
from datahub.lite.sqlite_lite_config import SqliteLiteConfig
from datahub.metadata.schema_classes import (
    ASPECT_NAME_MAP,
    ChangeAuditStampsClass,
    ChartInfoClass,
    ContainerClass,
    ContainerPropertiesClass,
    DataPlatformInstanceClass,
    DatasetPropertiesClass,
    OperationClass,
    OwnerClass,
    OwnershipClass,
    StatusClass,
    SubTypesClass,
    SystemMetadataClass,
    TagPropertiesClass,
)
from graph_estate import Estate

import recall_dagster.graph.lite
import recall_dagster.graph.lite_batch
from recall_dagster.graph import LiteGraph
from recall_dagster.graph.lite_batch import BROWSE_ASPECTS, BatchingLite

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:datahub.lite.sql_backed_lite")

CONTAINER = "urn:li:container:shop"
TAG = "urn:li:tag:pii"


def _proposals(estate: Estate) -> list[MetadataChangeProposalWrapper]:
    """Fresh objects each call: both writers fill in the system metadata of the proposals they are given."""

    def props(description: str) -> DatasetPropertiesClass:
        return DatasetPropertiesClass(name="orders", description=description)

    def mcp(urn: str, aspect, system: SystemMetadataClass | None = None) -> MetadataChangeProposalWrapper:
        return MetadataChangeProposalWrapper(entityUrn=urn, aspect=aspect, systemMetadata=system)

    return [
        *estate.mcps(),
        mcp(estate.raw, props("v1")),
        mcp(estate.raw, DataPlatformInstanceClass(platform="urn:li:dataPlatform:postgres", instance="eu")),
        mcp(estate.mart, ContainerClass(container=CONTAINER)),
        mcp(estate.mart, SubTypesClass(typeNames=["view"])),
        mcp(CONTAINER, ContainerPropertiesClass(name="shop")),
        mcp(TAG, TagPropertiesClass(name="pii")),
        mcp("urn:li:chart:(looker,orders)", ChartInfoClass(title="Orders", description="", lastModified=ChangeAuditStampsClass())),
        mcp(estate.raw, props("v2")),  # a new version: history 1, 2 and version 0 mirroring 2
        mcp(estate.raw, props("v2"), SystemMetadataClass(lastObserved=42, runId="again")),  # unchanged: lastObserved only
        mcp(estate.mart, OwnershipClass([OwnerClass("urn:li:corpuser:ana", "TECHNICAL_OWNER")]),
            SystemMetadataClass(lastObserved=7, runId="ingest-1", properties={"origin": "dbt"})),
        mcp(estate.mart, OwnershipClass([OwnerClass("urn:li:corpuser:bo", "TECHNICAL_OWNER")]),
            SystemMetadataClass(runId="ingest-2")),
        *(mcp(estate.raw, OperationClass(timestampMillis=t, operationType="INSERT", lastUpdatedTimestamp=t))
          for t in (2000, 1000, 3000, 2000)),
        mcp(estate.retired, StatusClass(removed=False)),  # undeleted
        *estate.mcps(),  # the whole estate again, unchanged
    ]


def _clocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both writers read ``time.time()`` once per aspect; each gets its own clock from the same instant."""
    for module in (datahub.lite.sql_backed_lite, recall_dagster.graph.lite_batch):
        ticks = count(1_700_000_000_000)
        monkeypatch.setattr(module, "time", SimpleNamespace(time=lambda ticks=ticks: next(ticks) / 1000))


def _tables(path: Path) -> dict[str, list[tuple]]:
    with closing(sqlite3.connect(path)) as con:
        return {
            table: con.execute(f"SELECT * FROM {table} ORDER BY rowid").fetchall()
            for table in ("metadata_aspect_v2", "metadata_edge_v2")
        }


def test_a_batch_stores_exactly_what_the_sdk_stores_one_at_a_time(
    tmp_path: Path, estate: Estate, monkeypatch: pytest.MonkeyPatch
) -> None:
    _clocks(monkeypatch)
    monkeypatch.setattr(recall_dagster.graph.lite, "WRITE_BATCH", 5)  # rewrites land in later batches too
    one_at_a_time, batched = tmp_path / "sdk.db", tmp_path / "batched.db"
    sdk = SqliteLite(SqliteLiteConfig(file=str(one_at_a_time)))
    for proposal in _proposals(estate):
        sdk.write(proposal)
    graph = LiteGraph(batched)
    first, rest = _proposals(estate)[:10], _proposals(estate)[10:]  # a second call finds the first one's rows
    reports = [graph.emit_mcps(first), graph.emit_mcps(rest)]

    assert all(r.ok for r in reports) and sum(r.written for r in reports) == len(_proposals(estate))
    assert _tables(batched) == _tables(one_at_a_time)  # browse edges included, before the close rebuilds them
    sdk.close()
    graph.close()
    after = _tables(batched)
    assert after == _tables(one_at_a_time)
    raw_properties = [row[2:5] for row in after["metadata_aspect_v2"] if row[:2] == (estate.raw, "datasetProperties")]
    assert [version for version, *_ in raw_properties] == [1, 0, 2]
    assert '"lastObserved": 42' in raw_properties[1][2] and '"sysVersion": "2"' in raw_properties[1][2]


def test_a_batch_is_one_commit(tmp_path: Path, estate: Estate, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(recall_dagster.graph.lite, "WRITE_BATCH", 4)
    graph = LiteGraph(tmp_path / "g.db")
    statements: list[str] = []
    graph._lite.sqlite_client.set_trace_callback(statements.append)  # type: ignore[union-attr]
    report = graph.emit_mcps(_proposals(estate))
    graph._lite.sqlite_client.set_trace_callback(None)  # type: ignore[union-attr]
    graph.close()
    assert report.ok and statements.count("COMMIT") == -(-len(_proposals(estate)) // 4)


def test_a_failing_store_rolls_its_batch_back_and_reports_it(
    tmp_path: Path, estate: Estate, monkeypatch: pytest.MonkeyPatch
) -> None:
    proposals = estate.mcps()
    upsert = recall_dagster.graph.lite_batch.upsert

    def full_disk_at_the_third(lite, writeable) -> None:
        if writeable.entityUrn == proposals[2].entityUrn:
            raise sqlite3.OperationalError("database or disk is full")
        upsert(lite, writeable)

    monkeypatch.setattr(recall_dagster.graph.lite, "upsert", full_disk_at_the_third)
    monkeypatch.setattr(recall_dagster.graph.lite, "WRITE_BATCH", 4)
    with closing(LiteGraph(tmp_path / "g.db")) as graph:
        report = graph.emit_mcps(proposals)
        stored = {urn for t in ("dataset", "mlFeature", "mlFeatureTable", "mlModel") for urn in graph.list_urns(t)}

    assert report.written == len(proposals) - 4
    assert [f[0] for f in report.failures] == [p.entityUrn for p in proposals[:4]]  # stored, failing, not tried
    assert all("disk is full" in f[2] and "rolled back" in f[2] for f in report.failures)
    assert stored.isdisjoint(p.entityUrn for p in proposals[:4])
    assert {p.entityUrn for p in proposals[4:6]} <= stored


def test_the_browse_hooks_read_no_aspect_but_those_the_reindex_decodes(tmp_path: Path) -> None:
    """The reindex decodes only BROWSE_ASPECTS: every other aspect class, handed to the SDK's hooks, adds no edge
    and changes none that the hooks add for an entity without it."""
    others = {name: cls._construct_with_defaults() for name, cls in ASPECT_NAME_MAP.items() if name not in BROWSE_ASPECTS}
    lite = BatchingLite(SqliteLiteConfig(file=str(tmp_path / "g.db")))
    edges = lambda: lite.sqlite_client.execute("SELECT * FROM metadata_edge_v2 ORDER BY rowid").fetchall()  # noqa: E731
    for urn in ("urn:li:dataset:(urn:li:dataPlatform:postgres,shop.orders,PROD)", "urn:li:dataJob:(urn:li:dataFlow:(airflow,etl,PROD),load)"):
        for name, aspect in others.items():
            lite.post_update_hook(urn, name, aspect)
        assert edges() == [], "a hook wrote edges for an aspect the reindex leaves undecoded"
        lite.global_post_update_hook(urn, {})
        bare = edges()
        lite.sqlite_client.execute("DELETE FROM metadata_edge_v2")
        lite.global_post_update_hook(urn, others)  # type: ignore[arg-type]
        assert edges() == bare and bare, urn
        lite.sqlite_client.execute("DELETE FROM metadata_edge_v2")
    lite.close()
