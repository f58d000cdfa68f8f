"""DataHub's Dagster plugin writes into a Lite graph through the demo's sensor, on a small location of real
assets keyed as the demo's are: a dbt model ``[schema, table]``, a Feast view ``[feast, view]``, a training
asset that is no dataset."""

from __future__ import annotations

from pathlib import Path

import pytest
from dagster import (
    AssetKey,
    AssetSpec,
    DagsterInstance,
    DefaultSensorStatus,
    Definitions,
    MaterializeResult,
    asset,
    build_sensor_context,
    define_asset_job,
    instance_for_test,
    multi_asset,
)
from datahub.metadata.schema_classes import DataProcessInstanceRunEventClass

from ml_models.registry import load_registry
from recall_dagster.graph import LiteGraph
from recall_dagster.settings import Settings
from seed.dagster.datahub_sensor import SENSOR, datahub_sensor
from seed.ingest.enrich import export_urn, table_urn

MART = AssetKey(["marts", "fct_orders"])
VIEW = AssetKey(["feast", "demand_features"])


@multi_asset(specs=[AssetSpec(MART)], name="dbt_warehouse")
def warehouse() -> MaterializeResult:
    return MaterializeResult(asset_key=MART)


@asset(key=VIEW, deps=[MART])
def view() -> None: ...


@asset(key=["ml", "demand_forecaster"], deps=[VIEW])
def training() -> MaterializeResult:
    return MaterializeResult(metadata={"version": 1})


def tick(defs: Definitions, instance: DagsterInstance, cursor: str | None) -> str | None:
    with build_sensor_context(instance=instance, cursor=cursor, definitions=defs) as context:
        defs.resolve_sensor_def(SENSOR)(context)
        return context.cursor


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings.under(tmp_path)


def test_a_run_reaches_the_lite_graph_as_the_plugin_writes_it(settings: Settings) -> None:
    registry = load_registry()
    sensor = datahub_sensor(settings, registry, [warehouse], view, DefaultSensorStatus.RUNNING)
    defs = Definitions(assets=[warehouse, view, training], jobs=[define_asset_job("dbt_build")], sensors=[sensor])
    with instance_for_test() as instance:
        started = tick(defs, instance, None)  # a run status sensor starts from the newest run
        result = defs.resolve_job_def("dbt_build").execute_in_process(instance=instance)
        seen = tick(defs, instance, started)
        graph = LiteGraph(settings.graph)
        try:
            token = graph.changes_since(None).token
            [flow] = graph.list_urns("dataFlow")
            assert graph.get_aspects([flow])[flow]["dataFlowInfo"].name == "dbt_build"
            jobs = graph.list_urns("dataJob")
            assert {graph.get_aspects([j])[j]["dataJobInfo"].name for j in jobs} == {
                "dbt_warehouse", "demand_features", "demand_forecaster"
            }, "a data job per op, named as the plugin names it (the key's last part)"
            mart, export = table_urn(registry, "fct_orders"), export_urn(registry, "demand_features")
            written = graph.related([mart, export], "Produces", "incoming")
            assert {u.split(":")[2] for u in written[mart]} == {"dataJob", "dataProcessInstance"}
            assert [j for j in written[export] if j.startswith("urn:li:dataJob:")] == [
                f"urn:li:dataJob:({flow},prod/feast__demand_features)"
            ]
            runs = graph.list_urns("dataProcessInstance")
            named = {graph.get_aspects([r])[r]["dataProcessInstanceProperties"].name: r for r in runs}
            assert result.run_id in named, "the run itself, besides one instance per step"
            [step] = [r for r in written[mart] if r.startswith("urn:li:dataProcessInstance:")]
            end, start = graph.timeseries([step], DataProcessInstanceRunEventClass)[step]
            assert (start.status, end.status, end.result.type) == ("STARTED", "COMPLETE", "SUCCESS")
        finally:
            graph.close()
        assert tick(defs, instance, seen) == seen
        again = LiteGraph(settings.graph)
        try:
            assert again.changes_since(token).urns == frozenset(), "a tick with no new run writes nothing"
        finally:
            again.close()
