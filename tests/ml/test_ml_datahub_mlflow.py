"""What DataHub's MLflow source makes of a training, so Recall can join registry data to its entities.

Pins the URN formats and the aspects the estate relies on, including the
MLflow 2.20 gap that leaves versionProperties.aliases empty, which Recall closes
by reading the aliases from the registry (graph/registry_overlay.py).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any, Iterator

import pytest
from datahub.api.entities.dataprocess.dataprocess_instance import DataProcessInstance
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata.schema_classes import VersionPropertiesClass
from mlflow import MlflowClient
from datahub.ingestion.api.common import PipelineContext
from datahub.ingestion.source.mlflow import MLflowSource

from ml_models import load_registry
from ml_models.train import TrainingRecord, train_model
from recall_dagster.graph import LiteGraph, open_graph
from recall_dagster.settings import Settings

Aspects = dict[str, dict[str, Any]]


@pytest.fixture(scope="module")
def mlflow_store(tmp_path_factory: pytest.TempPathFactory, module_warehouse) -> Iterator[tuple[str, list[TrainingRecord]]]:
    """Two trainings of fraud_detector in one SQLite MLflow, made once for the module (the source reads it once;
    the one test that moves an alias does so after): its URI and the trainings."""
    root = tmp_path_factory.mktemp("datahub-mlflow")
    (root / "mlflow").mkdir()
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)  # MLflow's SQL store makes ./mlruns wherever it runs
        uri = f"sqlite:///{root / 'mlflow' / 'mlflow.db'}"
        registry = load_registry()
        records = [train_model(registry.model("fraud_detector"), registry, module_warehouse.read_sql, uri)
                   for _ in range(2)]
        yield uri, records


@pytest.fixture(scope="module")
def trained(mlflow_store: tuple[str, list[TrainingRecord]]) -> tuple[list[TrainingRecord], Aspects]:
    uri, records = mlflow_store
    source = MLflowSource.create({"tracking_uri": uri}, PipelineContext(run_id="recall-test"))
    aspects: Aspects = defaultdict(dict)
    for unit in source.get_workunits():
        aspects[unit.metadata.entityUrn][unit.metadata.aspectName] = unit.metadata.aspect
    return records, aspects


def _run_urn(record: TrainingRecord) -> str:
    return str(DataProcessInstance(id=record.run_id, orchestrator="mlflow").urn)


def test_versions_become_ml_models_trained_by_their_run(trained: tuple[list[TrainingRecord], Aspects]) -> None:
    records, aspects = trained
    group = "urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,fraud_detector,PROD)"
    assert "mlModelGroupProperties" in aspects[group]
    for record in records:
        urn = f"urn:li:mlModel:(urn:li:dataPlatform:mlflow,fraud_detector_{record.version},PROD)"
        properties = aspects[urn]["mlModelProperties"]
        assert properties.groups == [group]
        assert properties.trainingJobs == [_run_urn(record)]
        assert [t.tag for t in aspects[urn]["globalTags"].tags] == ["urn:li:tag:mlflow_none"], "aliases, not stages"


def test_runs_record_the_warehouse_tables_they_read(trained: tuple[list[TrainingRecord], Aspects]) -> None:
    records, aspects = trained
    run = aspects[_run_urn(records[-1])]
    assert run["dataProcessInstanceRunEvent"].timestampMillis == records[-1].end_ms
    assert {m.name for m in run["mlTrainingRunProperties"].trainingMetrics} >= {"roc_auc", "rows_dropped_null_features"}
    upstreams = []
    for edge in run["dataProcessInstanceInput"].inputEdges:
        assert edge.destinationUrn.startswith("urn:li:dataset:(urn:li:dataPlatform:mlflow,warehouse.")
        upstreams += [u.dataset for u in aspects[edge.destinationUrn]["upstreamLineage"].upstreams]
    assert upstreams == [
        f"urn:li:dataset:(urn:li:dataPlatform:postgres,warehouse.{table},PROD)" for table in records[-1].input_tables
    ]


def test_aliases_do_not_reach_version_properties(trained: tuple[list[TrainingRecord], Aspects]) -> None:
    """MLflow 2.20's search_model_versions omits aliases; DataHub reads versions through it."""
    _, aspects = trained
    properties = aspects["urn:li:mlModel:(urn:li:dataPlatform:mlflow,fraud_detector_2,PROD)"]["versionProperties"]
    assert properties.aliases == []


def test_recall_reads_the_aliases_the_source_left_out_from_the_registry(
    trained: tuple[list[TrainingRecord], Aspects], mlflow_store: tuple[str, list[TrainingRecord]], tmp_path: Path
) -> None:
    _, aspects = trained
    tracking_uri = mlflow_store[0]
    lite = LiteGraph(str(tmp_path / "datahub.db"))
    lite.emit_mcps(
        MetadataChangeProposalWrapper(entityUrn=urn, aspect=aspect)
        for urn, named in aspects.items() for aspect in named.values()
    ).raise_if_failed("ingest")
    lite.close()
    settings = Settings(home=tmp_path / "home", graph=str(tmp_path / "datahub.db"), mlflow_tracking_uri=tracking_uri)
    versions = [f"urn:li:mlModel:(urn:li:dataPlatform:mlflow,fraud_detector_{n},PROD)" for n in (1, 2)]
    graph = open_graph(settings, read_only=True)
    try:
        read = graph.get_aspects(versions, [VersionPropertiesClass])
        token = graph.changes_since(None).token
        assert graph.changes_since(token).urns == frozenset(), "nothing moved"
    finally:
        graph.close()
    assert [[a.versionTag for a in read[u]["versionProperties"].aliases] for u in versions] == [[], ["production"]]
    MlflowClient(tracking_uri=tracking_uri, registry_uri=tracking_uri).set_registered_model_alias(
        "fraud_detector", "production", "1"
    )
    graph = open_graph(settings, read_only=True)
    try:
        assert graph.changes_since(token).urns is None, "an alias that moved makes a rescan read everything"
        read = graph.get_aspects(versions)
    finally:
        graph.close()
    assert [[a.versionTag for a in read[u]["versionProperties"].aliases] for u in versions] == [["production"], []]
