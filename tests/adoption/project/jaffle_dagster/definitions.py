from dagster import Definitions
from dagster_dbt import DbtCliResource

from recall_dagster.defs import RecallResource, retrain_gate

from .assets import forecast, jaffle_dbt_assets
from .project import jaffle_project

defs = Definitions(
    assets=[jaffle_dbt_assets, *retrain_gate(forecast, "order_forecaster")],
    resources={"dbt": DbtCliResource(project_dir=jaffle_project), "recall": RecallResource.from_env()},
)
