"""One ingestion pass: official sources (dbt, mlflow, feast) into the graph, then the enrichment on top.

Enrichment always follows the sources, so a re-ingestion that rewrites
``mlModelProperties`` never leaves the graph without features and deployments.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

import pyarrow.parquet as pq

from ml_models.feature_store import source_path
from ml_models.registry import FeatureRegistry
from recall_dagster.graph import open_graph
from seed.ingest import enrich
from seed.ingest.mlflow_state import VersionState, read_mlflow_state
from seed.ingest.recipes import dbt_recipe, feast_recipe, mlflow_recipe, run_recipes
from recall_dagster.settings import Settings
from seed.stack.dbt import DbtArtifacts
from seed.stack.tracking import ensure_tracking_server


@dataclass(frozen=True)
class IngestSummary:
    source_records: int
    enrichment_records: int
    versions: tuple[VersionState, ...]


def ingest_all(
    settings: Settings,
    registry: FeatureRegistry,
    artifacts: DbtArtifacts,
    deployed: Mapping[str, int],
    feast_repo: Path,
    say: Callable[[str], None] = lambda line: None,
) -> IngestSummary:
    """Run the dbt, mlflow (over the tracking server) and feast recipes in DataHub's ingestion environment, then
    write the enrichment through the graph port."""
    tracking = ensure_tracking_server(settings)
    recipes = [("dbt", dbt_recipe(settings, artifacts.manifest.parent, [artifacts.run_results])),
               ("mlflow", mlflow_recipe(settings, tracking))]
    if (feast_repo / "feature_store.yaml").exists():  # a Dagster dbt step may ingest before Feast first serves
        recipes.append(("feast", feast_recipe(settings, feast_repo, registry)))
    written = run_recipes(settings, recipes, say)
    versions = read_mlflow_state(tracking, [spec.registered_name for spec in registry.models])
    graph = open_graph(settings)
    try:
        urns = [enrich.model_version_urn(registry, v.registered_name, v.version) for v in versions]
        urns += [enrich.run_urn(v.run_id) for v in versions if v.run_id]
        current = graph.get_aspects(urns)
        mcps = enrich.catalog_mcps(registry)
        mcps += enrich.model_mcps(registry, versions, deployed, current)
        mcps += enrich.export_mcps(registry, read_exports(feast_repo, registry))
        report = graph.emit_mcps(mcps)
    finally:
        graph.close()
    report.raise_if_failed("enrichment")
    return IngestSummary(written, report.written, tuple(versions))


def read_exports(repo: Path, registry: FeatureRegistry) -> list[enrich.Export]:
    """The export files Feast serves from, read where they lie: their Arrow schema and modification time."""
    exports = []
    for table in registry.feature_tables:
        path = repo / source_path(table.name)
        if path.exists():
            schema = pq.read_schema(path)
            exports.append(enrich.Export(
                view=table.name,
                columns=tuple((name, str(schema.field(name).type)) for name in schema.names),
                written_ms=int(path.stat().st_mtime * 1000),
            ))
    return exports
