"""The demo's Feast repository as assets: one per feature view, downstream of the dbt models it reads.

Materialising them exports each feature table from the marts, applies the
repository, loads the online store and reads a sample back (what ``recall
estate build`` does in its Feast step); the ``datahub_metadata`` asset then
carries them into the graph through DataHub's feast source.
"""

from typing import Iterator

from dagster import AssetKey, AssetsDefinition, AssetSpec, MaterializeResult, MetadataValue, multi_asset
from dagster_dbt import get_asset_key_for_model

from ml_models.feature_store import export_columns, source_path
from ml_models.registry import FeatureRegistry
from recall_dagster.defs import RecallResource
from seed.injuries import serving_registry
from seed.stack.feast import feast_repo, serve_features
from seed.stack.warehouse import ensure_warehouse

GROUP = "feast"


def feature_view_key(view: str) -> AssetKey:
    return AssetKey(["feast", view])


def feast_assets(registry: FeatureRegistry, dbt: AssetsDefinition) -> AssetsDefinition:
    """Every feature view of the checked-in registry; a run serves what the serving registry says now."""
    specs = [
        AssetSpec(
            feature_view_key(table.name),
            deps=[get_asset_key_for_model([dbt], name) for name in dict.fromkeys(c.table for c in export_columns(table))],
            description=table.description,
            kinds={"feast", "parquet"},
        )
        for table in registry.feature_tables
    ]

    @multi_asset(name="feast_feature_views", group_name=GROUP, specs=specs)
    def feast_feature_views(recall: RecallResource) -> Iterator[MaterializeResult]:
        """Export, ``feast apply``, materialise the newest day online, and read a sample back."""
        settings = recall.settings()
        served = serve_features(settings, serving_registry(settings), ensure_warehouse(settings))
        for check in served.checks:
            yield MaterializeResult(asset_key=feature_view_key(check.view), metadata={
                "rows_exported": check.rows_exported,
                "rows_online": check.rows_online,
                "online_rows_checked": check.rows_checked,
                "export": MetadataValue.path(str(feast_repo(settings) / source_path(check.view))),
            })

    return feast_feature_views
