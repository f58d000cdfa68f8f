from dagster import AssetSelection, Definitions, define_asset_job
from dagster_dbt import DbtCliResource

from recall_dagster.defs import RecallResource, recall_definitions, retrain_gate

from .assets import forecast, jaffle_dbt_assets
from .project import jaffle_project

recall = RecallResource.from_env()
daily = define_asset_job("daily", selection=AssetSelection.all() - AssetSelection.groups("recall"))

defs = Definitions.merge(
    Definitions(
        assets=[jaffle_dbt_assets, *retrain_gate(forecast, "order_forecaster")],
        jobs=[daily],
        resources={"dbt": DbtCliResource(project_dir=jaffle_project), "recall": recall},
    ),
    recall_definitions(recall, dbt=jaffle_dbt_assets),
)
