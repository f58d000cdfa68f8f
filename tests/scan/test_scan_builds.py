"""A stock dbt estate says when its tables changed through its builds: DataHub's dbt source writes each model's
runs from ``run_results.json`` as process instances producing it, and ``dbt source freshness`` as the source's
``schemaMetadata.lastModified``. Both are freshness to Recall, with no operations written by anyone."""

from __future__ import annotations

from pathlib import Path

import pytest
from datahub.api.entities.datajob import DataFlow, DataJob
from datahub.api.entities.dataprocess.dataprocess_instance import DataProcessInstance, InstanceRunResult
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata.schema_classes import (
    AuditStampClass,
    OtherSchemaClass,
    SchemaFieldClass,
    SchemaFieldDataTypeClass,
    SchemaMetadataClass,
    StringTypeClass,
)
from datahub.utilities.urns.dataset_urn import DatasetUrn

from recall_dagster.estate.resolve import resolve_closures
from recall_dagster.kept.incremental import resolve_incremental, snapshot_key
from recall_dagster.graph import LiteGraph
from recall_dagster.config.load import load
from tests.graph.graph_estate import make_estate

HOUR = 3_600_000
T0 = 1_748_736_000_000


def build(mart: str, run: str, start_ms: int, result: InstanceRunResult) -> list[MetadataChangeProposalWrapper]:
    """One dbt model build as DataHub's dbt source records it (``model_performance``)."""
    instance = DataProcessInstance(
        id=f"{run}_{mart}", orchestrator="dbt", cluster=None, template_urn=DatasetUrn.from_string(mart),
        inlets=[], outlets=[DatasetUrn.from_string(mart)], properties={"dbt_urn": mart},
    )
    return [
        *instance.generate_mcp(materialize_iolets=False, created_ts_millis=start_ms),
        *instance.start_event_mcp(start_timestamp_millis=start_ms),
        *instance.end_event_mcp(end_timestamp_millis=start_ms + HOUR, start_timestamp_millis=start_ms, result=result,
                                result_type="success" if result is InstanceRunResult.SUCCESS else "error"),
    ]


@pytest.fixture
def graph(tmp_path: Path):
    graph = LiteGraph(str(tmp_path / "dbt.db"))
    graph.emit_mcps(make_estate().mcps()).raise_if_failed("estate")
    yield graph
    graph.close()


def mart_freshness(graph: LiteGraph, at_ms: int):
    estate = make_estate()
    [closure] = resolve_closures(graph, load().scan.resolve, include_all=True)
    return closure.dataset(estate.mart).freshness_at(at_ms)


def test_the_last_successful_build_is_when_the_table_changed(graph: LiteGraph) -> None:
    mart = make_estate().mart
    assert mart_freshness(graph, T0) is None, "no build, no operation: nobody says"
    graph.emit_mcps([*build(mart, "inv-1", T0 - 30 * HOUR, InstanceRunResult.SUCCESS),
                     *build(mart, "inv-2", T0 - 5 * HOUR, InstanceRunResult.FAILURE)]).raise_if_failed("builds")
    seen = mart_freshness(graph, T0)
    assert (seen.updated_ms, seen.source) == (T0 - 29 * HOUR, "build"), "a failed build wrote nothing"
    assert mart_freshness(graph, T0 - 40 * HOUR) is None, "--as-of before the build: not yet"


def test_dbt_source_freshness_stamps_the_source_as_loaded(graph: LiteGraph) -> None:
    raw = make_estate().raw
    schema = SchemaMetadataClass(
        schemaName="orders", platform="urn:li:dataPlatform:dbt", version=0, hash="", platformSchema=OtherSchemaClass(""),
        fields=[SchemaFieldClass("id", SchemaFieldDataTypeClass(StringTypeClass()), "string")],
        lastModified=AuditStampClass(time=T0 - 2 * HOUR, actor="urn:li:corpuser:dbt_executor"),
    )
    graph.emit_mcps([MetadataChangeProposalWrapper(entityUrn=raw, aspect=schema)]).raise_if_failed("freshness")
    [closure] = resolve_closures(graph, load().scan.resolve, include_all=True)
    seen = closure.dataset(raw).freshness_at(T0)
    assert (seen.updated_ms, seen.source) == (T0 - 2 * HOUR, "lastModified")
    schema.lastModified = AuditStampClass(time=T0, actor="urn:li:corpuser:ingestion")
    graph.emit_mcps([MetadataChangeProposalWrapper(entityUrn=raw, aspect=schema)]).raise_if_failed("schema change")
    [closure] = resolve_closures(graph, load().scan.resolve, include_all=True)
    assert closure.dataset(raw).freshness_at(T0) is None, "another source's schema stamp is a schema change"


def test_a_new_build_reaches_the_model_in_an_incremental_rescan(graph: LiteGraph) -> None:
    mart, options = make_estate().mart, load().scan.resolve
    _, first, _ = resolve_incremental(graph, options, include_all=True, previous=None)
    graph.emit_mcps(build(mart, "inv-3", T0 - 3 * HOUR, InstanceRunResult.SUCCESS)).raise_if_failed("build")
    closures, _, rescan = resolve_incremental(graph, options, include_all=True, previous=first)
    assert rescan.mode == "incremental" and rescan.reread == 1, rescan
    assert closures[0].dataset(mart).freshness_at(T0).updated_ms == T0 - 2 * HOUR
    assert first.key == snapshot_key(graph.location, options, True)


def test_the_orchestrator_job_writing_a_table_is_named(graph: LiteGraph) -> None:
    """DataHub's Dagster plugin records a data flow per job and a data job per op producing the tables its
    step materialized: the table says which Dagster job and op write it, by the names Dagster shows."""
    mart = make_estate().mart
    flow = DataFlow(orchestrator="dagster", id="seed.dagster.definitions/dbt_build", env="PROD", name="dbt_build")
    op = DataJob(id="seed.dagster.definitions/dbt_warehouse", flow_urn=flow.urn, name="dbt_warehouse")
    op.outlets = [DatasetUrn.from_string(mart)]
    graph.emit_mcps([*flow.generate_mcp(), *op.generate_mcp()]).raise_if_failed("dagster")
    [closure] = resolve_closures(graph, load().scan.resolve, include_all=True)
    assert closure.dataset(mart).written_by == ("dagster: dbt_build/dbt_warehouse",)
    assert closure.dataset(mart).freshness_at(T0) is None, "a job that writes it says nothing of when it last ran"


@pytest.mark.parametrize("renamed", ["flow", "job"])
def test_a_renamed_writer_reaches_the_model_in_an_incremental_rescan(graph: LiteGraph, renamed: str) -> None:
    """The job and the flow are read for the name a table's writer goes by, so renaming either is a change to
    every closure holding the table: a rescan reads it again and agrees with a full read."""
    mart, options = make_estate().mart, load().scan.resolve
    flow = DataFlow(orchestrator="dagster", id="defs/dbt_build", env="PROD", name="dbt_build")
    op = DataJob(id="defs/dbt_warehouse", flow_urn=flow.urn, name="dbt_warehouse")
    op.outlets = [DatasetUrn.from_string(mart)]
    graph.emit_mcps([*flow.generate_mcp(), *op.generate_mcp()]).raise_if_failed("dagster")
    _, first, _ = resolve_incremental(graph, options, include_all=True, previous=None)
    if renamed == "flow":
        flow.name = "nightly_build"
        graph.emit_mcps(list(flow.generate_mcp())).raise_if_failed("renamed flow")
    else:
        op.name = "warehouse_models"
        graph.emit_mcps(list(op.generate_mcp())).raise_if_failed("renamed job")
    closures, _, rescan = resolve_incremental(graph, options, include_all=True, previous=first)
    full = resolve_closures(graph, options, include_all=True)
    assert full[0].dataset(mart).written_by != first.closures[full[0].urn].dataset(mart).written_by
    assert (rescan.mode, closures) == ("incremental", full)
