"""Each sensor evaluated on a real instance: the right run requests, a cursor that advances, then silence."""

from __future__ import annotations

from typing import Iterator

import pytest
from dagster import (
    AssetCheckEvaluation,
    AssetCheckSeverity,
    AssetKey,
    DagsterInstance,
    SensorResult,
    build_sensor_context,
    instance_for_test,
)
from mlflow import MlflowClient

from recall_dagster.defs.scan import scan_run_config
from recall_dagster.settings import Settings

FRAUD_V2 = "urn:li:mlModel:(urn:li:dataPlatform:mlflow,fraud_detector_2,PROD)"
CHURN_V1 = "urn:li:mlModel:(urn:li:dataPlatform:mlflow,churn_predictor_1,PROD)"


@pytest.fixture
def instance() -> Iterator[DagsterInstance]:
    with instance_for_test() as instance:
        yield instance


def evaluate(definitions, instance: DagsterInstance, name: str, cursor: str | None) -> SensorResult:
    sensor = definitions.resolve_sensor_def(name)
    with build_sensor_context(
        instance=instance, cursor=cursor, definitions=definitions, resources=definitions.resources
    ) as context:
        result = sensor(context)
    assert isinstance(result, SensorResult)
    return result


def dbt_test(instance: DagsterInstance, table: str, test: str, passed: bool) -> None:
    """A dbt test result as the event log records it; dbt itself runs in the stack tests."""
    instance.report_runless_asset_event(
        AssetCheckEvaluation(
            asset_key=AssetKey(["marts", table]), check_name=test, passed=passed, severity=AssetCheckSeverity.ERROR
        )
    )


def test_a_failed_dbt_test_scans_the_models_downstream_once(definitions, instance) -> None:
    first = evaluate(definitions, instance, "dbt_test_failures", None)
    assert first.run_requests == [] and first.cursor is None, "nothing has run yet"

    dbt_test(instance, "fct_transactions", "not_null_fct_transactions_unit_price", passed=False)
    dbt_test(instance, "dim_customers", "unique_dim_customers_customer_id", passed=True)
    result = evaluate(definitions, instance, "dbt_test_failures", None)
    [request] = result.run_requests
    assert request.run_config == scan_run_config(models=["fraud_detector"])
    assert request.tags["recall/trigger"] == "dbt_test_failure"
    assert result.cursor

    again = evaluate(definitions, instance, "dbt_test_failures", result.cursor)
    assert again.run_requests == [] and again.cursor is None, "nothing changed: no run, cursor kept"

    dbt_test(instance, "fct_orders", "not_null_fct_orders_unit_price", passed=False)
    later = evaluate(definitions, instance, "dbt_test_failures", result.cursor)
    [request] = later.run_requests
    assert request.run_config == scan_run_config(models=["demand_forecaster"])
    assert request.run_key != result.run_requests[0].run_key and later.cursor != result.cursor


def test_passing_tests_advance_the_cursor_without_a_scan(definitions, instance) -> None:
    dbt_test(instance, "fct_transactions", "not_null_fct_transactions_unit_price", passed=True)
    result = evaluate(definitions, instance, "dbt_test_failures", None)
    assert result.run_requests == [] and result.cursor
    assert evaluate(definitions, instance, "dbt_test_failures", result.cursor).cursor is None


def test_a_failure_no_model_reads_launches_nothing(definitions, instance) -> None:
    dbt_test(instance, "fct_device_features_v2", "unique_fct_device_features_v2_transaction_id", passed=False)
    assert evaluate(definitions, instance, "dbt_test_failures", None).run_requests == []


def test_a_new_model_version_is_ingested_and_scanned(definitions, defs_settings: Settings, instance) -> None:
    defs_settings.mlflow_dir.mkdir(parents=True, exist_ok=True)
    client = MlflowClient(tracking_uri=defs_settings.mlflow_uri, registry_uri=defs_settings.mlflow_uri)
    for name in ("fraud_detector", "churn_predictor"):
        client.create_registered_model(name)
    client.create_model_version("fraud_detector", source="file:///nowhere/seed")

    first = evaluate(definitions, instance, "mlflow_new_versions", None)
    assert first.run_requests == [] and first.cursor, "versions that existed before the sensor are not news"
    assert evaluate(definitions, instance, "mlflow_new_versions", first.cursor).run_requests == []

    client.create_model_version("fraud_detector", source="file:///nowhere/retrain")
    client.create_model_version("churn_predictor", source="file:///nowhere/retrain")
    result = evaluate(definitions, instance, "mlflow_new_versions", first.cursor)
    assert [r.run_config for r in result.run_requests] == [
        scan_run_config(model_urns=[FRAUD_V2]), scan_run_config(model_urns=[CHURN_V1])
    ]
    assert [r.run_key for r in result.run_requests] == ["mlflow-fraud_detector-2", "mlflow-churn_predictor-1"]
    assert int(result.cursor) > int(first.cursor)

    again = evaluate(definitions, instance, "mlflow_new_versions", result.cursor)
    assert again.run_requests == [] and again.cursor is None
