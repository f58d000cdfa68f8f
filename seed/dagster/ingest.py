"""The demo's DataHub ingestion: the dbt, mlflow and feast sources, then what no source writes.

The dbt step ingests at its end (a failing test must reach DataHub even though
dbt skips what follows it); the ``datahub_metadata`` asset, downstream of the
training and of the Feast feature views, carries every retrain and every
re-served feature into the graph Recall reads.
"""

from dagster import AssetsDefinition, MaterializeResult, MetadataValue, asset

from recall_dagster.defs import RecallResource
from recall_dagster.progress import Progress
from recall_dagster.scan_markdown import table
from recall_dagster.settings import Settings
from seed import injuries, lifecycle

INGEST_KEY = "datahub_metadata"


def ingest_estate(settings: Settings) -> list[tuple[str, int, tuple[str, ...]]]:
    """One ingestion pass over the estate as it stands: registered versions with their aliases."""
    return lifecycle.ingest(
        settings, injuries.serving_registry(settings), lifecycle.EstateState(settings), Progress(quiet=True)
    )


def datahub_metadata_asset(upstream: list[AssetsDefinition]) -> AssetsDefinition:
    """Ingestion into the graph, downstream of the promotions and feature views it carries."""

    @asset(name=INGEST_KEY, group_name="datahub", deps=[k for t in upstream for k in t.keys], kinds={"datahub"})
    def datahub_metadata(recall: RecallResource) -> MaterializeResult:
        """DataHub's dbt, mlflow and feast sources into the graph, then the enrichment none of them write."""
        settings = recall.settings()
        versions = ingest_estate(settings)
        rows = ((name, version, ", ".join(aliases) or "-") for name, version, aliases in versions)
        model_versions = MetadataValue.md(table(("model", "version", "aliases"), rows))
        return MaterializeResult(metadata={"graph": settings.graph, "model_versions": model_versions})

    return datahub_metadata
