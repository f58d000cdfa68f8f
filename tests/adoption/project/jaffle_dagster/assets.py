import os

import duckdb
import mlflow
import mlflow.data
import mlflow.sklearn
import numpy as np
import pandas as pd
from dagster import AssetExecutionContext, MaterializeResult, asset
from dagster_dbt import DbtCliResource, dbt_assets, get_asset_key_for_model
from mlflow.tracking import MlflowClient
from sklearn.linear_model import LinearRegression

from .project import jaffle_project


@dbt_assets(manifest=jaffle_project.manifest_path)
def jaffle_dbt_assets(context: AssetExecutionContext, dbt: DbtCliResource):
    yield from dbt.cli(["build"], context=context).stream()


@asset(compute_kind="python", deps=[get_asset_key_for_model([jaffle_dbt_assets], "daily_orders")])
def forecast(context: AssetExecutionContext) -> MaterializeResult:
    """Fit order_count ~ day index on daily_orders, log and register it in MLflow."""
    with duckdb.connect(os.environ.get("JAFFLE_DUCKDB", "/tmp/jaffle/jaffle.duckdb"), read_only=True) as con:
        frame: pd.DataFrame = con.execute("select * from main.daily_orders order by day").df()

    x = np.arange(len(frame)).reshape(-1, 1)
    y = frame["order_count"].to_numpy()
    model = LinearRegression().fit(x, y)

    mlflow.set_tracking_uri(os.environ["MLFLOW_TRACKING_URI"])
    mlflow.set_experiment("order_forecast")
    with mlflow.start_run() as run:
        mlflow.log_input(
            mlflow.data.from_pandas(frame, source="jaffle.main.daily_orders", name="daily_orders"),
            context="training",
        )
        mlflow.log_param("rows", len(frame))
        mlflow.log_metric("table_rows.main.daily_orders", len(frame))  # Recall's gate compares the rows now
        mlflow.log_metric("r2", float(model.score(x, y)))
        mlflow.sklearn.log_model(model, artifact_path="model")
    version = mlflow.register_model(f"runs:/{run.info.run_id}/model", "order_forecaster")
    MlflowClient().set_registered_model_alias("order_forecaster", "production", version.version)
    context.log.info(f"order_forecaster v{version.version} is production (run {run.info.run_id})")
    return MaterializeResult(metadata={"version": int(version.version), "rows": len(frame)})
