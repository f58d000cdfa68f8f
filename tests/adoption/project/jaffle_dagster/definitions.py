from dagster import AssetSelection, Definitions, define_asset_job
from dagster_dbt import DbtCliResource

from recall_dagster.defs import RecallResource, retrain_gate

from .assets import forecast, jaffle_dbt_assets
from .project import jaffle_project

daily = define_asset_job("daily", selection=AssetSelection.all())

defs = Definitions(
    assets=[jaffle_dbt_assets, *retrain_gate(forecast, "order_forecaster")],
    jobs=[daily],
    resources={"dbt": DbtCliResource(project_dir=jaffle_project), "recall": RecallResource.from_env()},
)
