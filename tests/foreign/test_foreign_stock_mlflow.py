"""A team's stock MLflow: ``mlflow.log_input`` with MLflow's own pandas dataset, an alias set on the version, and
DataHub's stock mlflow source. The run's input arrives as a bare ``mlflow`` dataset reference; Recall ties it to
the table the team's dbt source catalogued under that name, and names what it could not tie."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import mlflow
import pandas as pd
import pytest
from click.testing import CliRunner
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.ingestion.api.common import PipelineContext
from datahub.ingestion.source.mlflow import MLflowSource
from datahub.metadata.schema_classes import (
    DatasetLineageTypeClass,
    DatasetPropertiesClass,
    UpstreamClass,
    UpstreamLineageClass,
)
from mlflow import MlflowClient

from ml_models.tracking import mlflow_process_state
from recall_dagster.cli import cli
from recall_dagster.estate.resolve import resolve_closures
from recall_dagster.graph import LiteGraph, open_graph
from recall_dagster.mlflow_inputs import warehouse_dataset
from recall_dagster.recipes import mlflow_recipe
from recall_dagster.config.load import load
from recall_dagster.settings import Settings

ORDERS = "urn:li:dataset:(urn:li:dataPlatform:duckdb,analytics.main.daily_orders,PROD)"
ORDERS_DBT = "urn:li:dataset:(urn:li:dataPlatform:dbt,analytics.main.daily_orders,PROD)"


def train(uri: str, *inputs: str, exact: bool = False) -> None:
    """What the team's training asset does: log its inputs with MLflow's pandas dataset (or, ``exact``, Recall's
    warehouse dataset naming the table as DataHub does), register, set the alias."""
    with mlflow_process_state():
        mlflow.set_tracking_uri(uri)
        mlflow.set_experiment("forecast")
        frame = pd.DataFrame({"day": ["2025-05-01", "2025-05-02"], "orders": [10.0, 12.0]})
        with mlflow.start_run() as run, warnings.catch_warnings():
            # MLflow tries every dataset source it knows on a bare path, and says so: the team's noise, not ours
            warnings.simplefilter("ignore", UserWarning)
            for name in inputs:
                dataset = (warehouse_dataset(frame, "duckdb", name) if exact
                           else mlflow.data.from_pandas(frame, source=f"{name}.parquet", name=name))
                mlflow.log_input(dataset, context="training")
            mlflow.log_metric("mape", 0.1)
    client = MlflowClient(tracking_uri=uri, registry_uri=uri)
    client.create_registered_model("forecaster")
    version = client.create_model_version("forecaster", source=f"runs:/{run.info.run_id}/model", run_id=run.info.run_id)
    client.set_registered_model_alias("forecaster", "production", version.version)


def catalog() -> list[MetadataChangeProposalWrapper]:
    """What the team's dbt source wrote for the table: the warehouse table and the dbt node copying it."""
    copy = UpstreamLineageClass(upstreams=[UpstreamClass(dataset=ORDERS, type=DatasetLineageTypeClass.COPY)])
    return [
        MetadataChangeProposalWrapper(entityUrn=ORDERS, aspect=DatasetPropertiesClass(name="daily_orders")),
        MetadataChangeProposalWrapper(entityUrn=ORDERS_DBT, aspect=DatasetPropertiesClass(name="daily_orders")),
        MetadataChangeProposalWrapper(entityUrn=ORDERS_DBT, aspect=copy),
    ]


def ingest(tmp_path: Path, *inputs: str, exact: bool = False) -> Settings:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    train(uri, *inputs, exact=exact)
    recipe = mlflow_recipe(uri, {}, "duckdb")["source"]["config"]  # as recall init writes it for a DuckDB team
    source = MLflowSource.create(recipe, PipelineContext(run_id="stock"))
    graph = LiteGraph(str(tmp_path / "datahub.db"))
    graph.emit_mcps([*catalog(), *(u.metadata for u in source.get_workunits())]).raise_if_failed("ingest")
    graph.close()
    return Settings(home=tmp_path / "home", graph=str(tmp_path / "datahub.db"), mlflow_tracking_uri=uri)


@pytest.fixture
def estate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.chdir(tmp_path)  # MLflow's SQL store makes ./mlruns wherever it runs
    return ingest(tmp_path, "daily_orders", "scratch_frame")


def scan(settings: Settings) -> tuple[int, dict[str, Any]]:
    done = CliRunner().invoke(cli, ["scan", "--json", "--graph", settings.graph],
                              env={"RECALL_HOME": str(settings.home), "MLFLOW_TRACKING_URI": settings.mlflow_uri})
    return done.exit_code, json.loads(done.output)


def test_a_stock_mlflow_input_is_the_table_it_names_and_an_unnamed_one_is_said(estate: Settings) -> None:
    code, body = scan(estate)
    assert code in (0, 1), body
    [model] = body["models"]
    assert (model["name"], model["production"]) == ("forecaster_1", True), "the alias, read from the registry"
    assert body["coverage"]["models"]["with_training_inputs"] == 1
    assert body["coverage"]["unresolved_training_inputs"] == {"forecaster_1": ["scratch_frame"]}, (
        "an input that names nothing catalogued is not a recorded input, and is named")
    assert ORDERS in closure_of(estate).training_inputs, "the dbt node and warehouse table fold into the one table"


def closure_of(settings: Settings):  # noqa: ANN201 - a ModelClosure
    graph = open_graph(settings, read_only=True)
    try:
        [closure] = resolve_closures(graph, load().scan.resolve)
    finally:
        graph.close()
    return closure


def test_the_warehouse_dataset_helper_gives_datahub_the_exact_edge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                                    ) -> None:
    monkeypatch.chdir(tmp_path)
    settings = ingest(tmp_path, "analytics.main.daily_orders", exact=True)
    graph = LiteGraph(settings.graph)
    try:
        reference = "urn:li:dataset:(urn:li:dataPlatform:mlflow,analytics.main.daily_orders,PROD)"
        lineage = graph.get_aspects([reference], [UpstreamLineageClass])[reference][UpstreamLineageClass.ASPECT_NAME]
    finally:
        graph.close()
    assert [(u.dataset, u.type) for u in lineage.upstreams] == [(ORDERS, DatasetLineageTypeClass.COPY)], (
        "DataHub's own mlflow source links the input to the warehouse table, no name lookup needed")
    closure = closure_of(settings)
    assert ORDERS in closure.training_inputs and closure.unresolved_inputs == ()
