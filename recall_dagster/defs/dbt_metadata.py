"""What dagster-dbt built and tested, in the graph before each scan: no copy step for a team whose dbt runs
inside Dagster.

dagster-dbt runs each dbt command in a folder of its own under ``target/``; the dbt recipe ``recall init``
writes reads every such folder's run results and the newest manifest that holds compiled SQL
(:mod:`recall_dagster.dbt_artifacts`). This asset runs that recipe as ``recall ingest`` does. It sits downstream
of the team's dbt assets in the lineage (what Recall reads) and upstream of the scan and the incidents, and
Recall's scan jobs run it first. It is not put in the team's own dbt job on purpose: a failing dbt test fails
that job's dbt step and Dagster skips everything downstream of it, which is exactly when the graph must hear.
"""

from pathlib import Path

from dagster import AssetExecutionContext, AssetsDefinition, Failure, MaterializeResult, MetadataValue

from recall_dagster.defs.resources import RecallResource
from recall_dagster.defs.translator import RecallTranslator, recall_asset
from recall_dagster.errors import RecallError
from recall_dagster.ingestion import run_recipes

ASSET = "dbt_metadata"


def dbt_metadata_asset(recipe: Path, dbt: AssetsDefinition | None = None,
                       translator: RecallTranslator | None = None) -> AssetsDefinition:
    """The asset that ingests ``recipe`` (a dbt recipe), downstream of ``dbt`` (the team's dbt assets)."""
    t = translator or RecallTranslator()
    deps = sorted(dbt.keys, key=lambda key: key.to_user_string()) if dbt is not None else []

    @recall_asset(t, ASSET, deps=deps, kinds={"dbt", "datahub"},
                  description="Ingests the artifacts of the dbt invocations (dagster-dbt's included) into DataHub "
                              f"with {recipe.name}, so the scan reads each test's newest result and each build.")
    def dbt_metadata(context: AssetExecutionContext, recall: RecallResource) -> MaterializeResult:
        try:
            noted = run_recipes([recipe], recall.settings().home, context.log.info)
        except RecallError as error:
            raise Failure(description=f"dbt's artifacts did not reach the graph: {error}", allow_retries=False
                          ) from None
        said = "; ".join(noted) if noted else "every artifact the recipe names was there"
        return MaterializeResult(metadata={"summary": f"dbt's artifacts ingested with {recipe.name}",
                                           "recipe": MetadataValue.path(str(recipe)), "read": MetadataValue.text(said)})

    return dbt_metadata
