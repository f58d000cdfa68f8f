"""The demo's Feast repository, served from the SQLite stand-in, and what DataHub's feast source makes of it (in
the ingestion environment, where Feast itself runs)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from datahub.emitter.mce_builder import make_schema_field_urn
from datahub.metadata.schema_classes import MLModelPropertiesClass

from ml_models import FeatureRegistry
from ml_models.feast_env import run_feast
from ml_models.feature_store import ONLINE_WINDOW, feature_ref, serve, source_path
from ml_models.train import train_model
from recall_dagster.errors import StackError
from recall_dagster.graph import open_graph
from seed.ingest import enrich
from seed.ingest.mlflow_state import read_mlflow_state
from recall_dagster.settings import Settings
from seed.ingest.recipes import feast_recipe, run_recipes
from seed.ingest.run import read_exports

NOW = datetime(2024, 3, 2, tzinfo=timezone.utc)
FRAUD = "fraud_transaction_features"


def _source_aspects(repo: Path, registry: FeatureRegistry) -> dict[str, dict[str, Any]]:
    """Every aspect DataHub's feast source writes for the repository, run as the demo runs its recipe."""
    settings = Settings.under(repo.parent / "home")
    settings.ensure_home()
    run_recipes(settings, [("feast", feast_recipe(settings, repo, registry))])
    graph = open_graph(settings, read_only=True)
    try:
        urns = [u for etype in ("mlFeatureTable", "mlFeature", "mlPrimaryKey", "dataset")
                for u in graph.list_urns(etype)]
        return defaultdict(dict, graph.get_aspects(urns))
    finally:
        graph.close()


def test_every_feature_table_is_served_online_as_exported(registry: FeatureRegistry, warehouse, tmp_path: Path) -> None:
    served = serve(tmp_path / "feast", registry, warehouse.read_sql, NOW)
    assert [c.view for c in served.checks] == [t.name for t in registry.feature_tables]
    homes = {t.name: len(warehouse.read_sql(f"SELECT * FROM {registry.table(t.home).qualified_name}"))
             for t in registry.feature_tables}
    for check in served.checks:
        assert check.rows_exported == homes[check.view]
        assert check.rows_checked > 0 and check.mismatches == ()
        exported = pd.read_parquet(tmp_path / "feast" / source_path(check.view))
        assert len(exported) == check.rows_exported
    demand = pd.read_parquet(tmp_path / "feast" / source_path("demand_features"))
    assert set(demand["day_of_week"]) <= set(range(7))  # the registry's transform, as training applies it


def test_the_online_store_holds_the_newest_day_of_event_rows_and_the_whole_snapshot(
    registry: FeatureRegistry, warehouse, tmp_path: Path
) -> None:
    transactions = warehouse.read_sql("SELECT * FROM marts.fct_transactions")
    stamps = pd.Timestamp("2024-01-10T12:00:00") - pd.to_timedelta(transactions.index % 240, unit="h")
    transactions["occurred_at"] = stamps.strftime("%Y-%m-%dT%H:%M:%S")
    warehouse.put("marts.fct_transactions", transactions)
    served = {c.view: c for c in serve(tmp_path / "feast", registry, warehouse.read_sql, NOW).checks}
    newest = stamps.max()
    in_window = int((stamps >= newest - ONLINE_WINDOW - timedelta(seconds=1)).sum())
    assert served[FRAUD].rows_online == in_window < served[FRAUD].rows_exported
    customers = served["customer_features"]
    assert customers.rows_online == customers.rows_exported  # a snapshot is stamped now: all of it is newest


def test_a_feature_table_dropped_from_the_registry_leaves_feast(
    registry: FeatureRegistry, warehouse, tmp_path: Path
) -> None:
    repo = tmp_path / "feast"
    serve(repo, registry, warehouse.read_sql, NOW)
    kept = replace(registry, feature_tables=tuple(t for t in registry.feature_tables if t.name != "demand_features"))
    served = serve(repo, kept, warehouse.read_sql, NOW)
    assert served.removed == ("demand_features",)
    assert run_feast({"repo": str(repo), "list": True})["views"] == sorted(t.name for t in kept.feature_tables)
    assert serve(repo, kept, warehouse.read_sql, NOW).removed == ()


def test_a_job_feast_fails_names_the_repository_and_the_worker_serves_the_next(
    registry: FeatureRegistry, warehouse, tmp_path: Path
) -> None:
    """One Feast process serves every job: a failing one is answered with Feast's own error, and the next job
    still gets its answer (no worker left dead or out of step)."""
    repo = tmp_path / "feast"
    serve(repo, registry, warehouse.read_sql, NOW)
    missing = tmp_path / "no-such-repository"
    with pytest.raises(StackError, match=f"failed on the repository {missing}") as raised:
        run_feast({"repo": str(missing), "list": True})
    assert "Traceback" in str(raised.value) or "Error" in str(raised.value)
    assert run_feast({"repo": str(repo), "list": True})["views"] == sorted(t.name for t in registry.feature_tables)


@pytest.mark.slow  # the embedded stack for seconds each: `make test-slow`
def test_datahub_feast_source_names_features_as_enrichment_links_them_and_the_export_reads_the_warehouse(
    registry: FeatureRegistry, warehouse, tmp_path: Path
) -> None:
    repo = tmp_path / "feast"
    serve(repo, registry, warehouse.read_sql, NOW)
    aspects = _source_aspects(repo, registry)
    fraud = next(t for t in registry.feature_tables if t.name == FRAUD)
    view_urn = f"urn:li:mlFeatureTable:(urn:li:dataPlatform:feast,recall.{FRAUD})"
    features = [enrich.feature_urn(feature_ref(FRAUD, f.name)) for f in fraud.features]
    assert aspects[view_urn]["mlFeatureTableProperties"].mlFeatures == features
    assert [o.owner for o in aspects[view_urn]["ownership"].owners] == [fraud.owners[0].id]
    export = enrich.export_urn(registry, FRAUD)
    for urn in features:
        assert aspects[urn]["mlFeatureProperties"].sources == [export]

    written = defaultdict(dict)
    for mcp in enrich.export_mcps(registry, read_exports(repo, registry)):
        written[mcp.entityUrn][mcp.aspectName] = mcp.aspect
    lineage = written[export]["upstreamLineage"]
    assert {u.dataset for u in lineage.upstreams} == {
        enrich.table_urn(registry, "fct_transactions"), enrich.table_urn(registry, "fct_device_features")
    }
    emulator = make_schema_field_urn(export, "device_is_emulator")
    [edge] = [e for e in lineage.fineGrainedLineages if e.downstreams == [emulator]]
    assert edge.upstreams == [make_schema_field_urn(enrich.table_urn(registry, "fct_device_features"), "is_emulator")]
    assert {f.fieldPath for f in written[export]["schemaMetadata"].fields} >= {"transaction_id", "device_is_emulator"}


def test_a_model_version_consumes_the_feast_features_its_training_run_logged(
    registry: FeatureRegistry, warehouse, tracking_uri: str
) -> None:
    model = registry.model("churn_predictor")
    record = train_model(model, registry, warehouse.read_sql, tracking_uri)
    [state] = read_mlflow_state(tracking_uri, [model.registered_name])
    assert state.run_id == record.run_id
    assert state.feature_refs == tuple(feature_ref("customer_features", f.name) for f in model.features)
    urn = enrich.model_version_urn(registry, model.registered_name, record.version)
    current = {urn: {"mlModelProperties": MLModelPropertiesClass(trainingJobs=[enrich.run_urn(record.run_id)])}}
    written = [m.aspect for m in enrich.model_mcps(registry, [state], {}, current)
               if m.entityUrn == urn and m.aspectName == "mlModelProperties"]
    assert written[0].mlFeatures == [f"urn:li:mlFeature:(recall.customer_features,{f.name})" for f in model.features]
