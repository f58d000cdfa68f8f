"""The warehouse as assets: the raw layer's load, then the dbt project with its tests as asset checks.

dagster-dbt needs a manifest when the definitions load; it is parsed once into
``RECALL_HOME/dbt/dagster`` (again only when the project changed), without a
database. The build itself runs with ``target_path`` = ``RECALL_HOME/dbt/target``,
where the DataHub ingestion reads dbt's artifacts, and keeps the build's
``run_results.json`` apart before ``docs generate`` overwrites it, as the CLI does.
"""

import shutil
import sys
from pathlib import Path
from typing import Any, Iterator, Mapping

from dagster import AssetCheckSpec, AssetExecutionContext, AssetKey, AssetSpec, AssetsDefinition, MaterializeResult, multi_asset
from dagster_dbt import DagsterDbtTranslator, DbtCliResource, DbtProject, dbt_assets

from recall_dagster.defs import RecallResource
from recall_dagster.settings import Settings
from seed.stack.dbt import (
    PROJECT_DIR,
    dbt_environment,
    keep_build_results,
    dbt_docs_generate,
    dbt_env,
    dbt_source_freshness,
    dbt_target_dir,
)
from seed.dagster.ingest import ingest_estate
from seed.stack.warehouse import WAREHOUSE_DB, Warehouse, ensure_warehouse
from seed.generate import RAW_TABLES
from seed.lifecycle import EstateState, load_raw_layer

GROUP = "warehouse"  # the dbt project
RAW_GROUP = "raw"  # what the loaders write
RAW_SOURCE = "raw"  # the dbt source whose tables the raw layer loads; dagster-dbt keys them raw/<table>
# dbt parse renders profiles.yml but never connects: any address will do.
_PARSE_WAREHOUSE = Warehouse(
    host="localhost", port=5432, user="recall", password="", database=WAREHOUSE_DB, managed=False
)


def dbt_project(settings: Settings) -> DbtProject:
    """The checked-in project, its manifest parsed under RECALL_HOME when missing or older than the project."""
    project = DbtProject(PROJECT_DIR, target_path=settings.dbt_dir / "dagster", profiles_dir=PROJECT_DIR)
    if _stale(project.manifest_path):
        with dbt_environment(dbt_env(_PARSE_WAREHOUSE)):
            dbt_cli().cli(["parse", "--quiet"], target_path=project.manifest_path.parent).wait()
    return project


def dbt_cli() -> DbtCliResource:
    """dbt from this interpreter's environment, found even when the venv is not on PATH."""
    executable = shutil.which("dbt") or str(Path(sys.executable).with_name("dbt"))
    return DbtCliResource(project_dir=str(PROJECT_DIR), profiles_dir=str(PROJECT_DIR), dbt_executable=executable)


def _stale(manifest: Path) -> bool:
    if not manifest.exists():
        return True
    built = manifest.stat().st_mtime
    return any(p.stat().st_mtime > built for p in PROJECT_DIR.rglob("*") if p.suffix in (".sql", ".yml", ".yaml"))


class _Translator(DagsterDbtTranslator):
    def get_group_name(self, dbt_resource_props: Mapping[str, Any]) -> str:
        return GROUP

    def get_asset_check_spec(
        self, asset_spec: AssetSpec, manifest: Mapping[str, Any], unique_id: str, project: DbtProject | None
    ) -> AssetCheckSpec | None:
        """dbt's tests as checks, none blocking: a failing test must not fail the build step before its result
        is ingested, and Recall's retrain gates read every upstream test's result."""
        spec = super().get_asset_check_spec(asset_spec, manifest, unique_id, project)
        return spec._replace(blocking=False) if spec is not None else None


def warehouse_dbt_assets(project: DbtProject) -> AssetsDefinition:
    """Every dbt model as an asset and every dbt test as an asset check on the model it tests."""

    @dbt_assets(
        manifest=project.manifest_path, project=project, dagster_dbt_translator=_Translator(), name="dbt_warehouse"
    )
    def dbt_warehouse(context: AssetExecutionContext, dbt: DbtCliResource, recall: RecallResource) -> Iterator[Any]:
        """``dbt build`` (models and tests), then source freshness and the catalog DataHub's dbt source reads.

        dbt's non-zero exit on a failing test is not raised: the test arrives as a
        failed check, the ingestion carries it into DataHub, and Recall's sensors and
        retrain gates take it from there.
        """
        settings = recall.settings()
        warehouse = ensure_warehouse(recall.settings())
        target = dbt_target_dir(settings)
        with dbt_environment(dbt_env(warehouse)):
            invocation = dbt.cli(["build"], context=context, target_path=target, raise_on_error=False)
        yield from invocation.stream()
        keep_build_results(settings)
        dbt_source_freshness(settings, warehouse)
        dbt_docs_generate(settings, warehouse)
        # dbt skips the models after a failing test, and Dagster the assets after those: the ingestion that
        # carries the failure into DataHub therefore runs here, in the step that produced it.
        ingest_estate(settings)

    return dbt_warehouse


@multi_asset(
    name="raw_layer",
    group_name=RAW_GROUP,
    specs=[AssetSpec(AssetKey([RAW_SOURCE, table]), kinds={"postgres"}) for table in RAW_TABLES],
)
def raw_layer(recall: RecallResource) -> Iterator[MaterializeResult]:
    """Load the demo's raw layer (what the loaders write in production) at the estate's anchor time.

    The load is deterministic for an anchor and a scale, so re-materializing
    it restores the raw data exactly; an estate without an anchor gets one now.
    """
    rows = load_raw_layer(EstateState(recall.settings()), ensure_warehouse(recall.settings()))
    for table, count in rows.items():
        yield MaterializeResult(asset_key=AssetKey([RAW_SOURCE, table]), metadata={"rows": count})
