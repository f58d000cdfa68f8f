"""Train → register → alias against a throwaway SQLite MLflow and a SQLite warehouse."""

from __future__ import annotations

import dataclasses
import time

import mlflow.sklearn
import pandas as pd
import pytest
from mlflow import MlflowClient

from ml_models import FeatureRegistry, ModelSpec
from ml_models.fit import TrainingDataError
from ml_models.query import build_training_query
from ml_models.train import TrainingRecord, train_model

FRAUD_INPUTS = ("staging.stg_fraud_labels", "marts.fct_transactions", "marts.fct_device_features")


def _client(tracking_uri: str) -> MlflowClient:
    return MlflowClient(tracking_uri=tracking_uri, registry_uri=tracking_uri)


def _with_training(model: ModelSpec, **changes: object) -> ModelSpec:
    return dataclasses.replace(model, training=dataclasses.replace(model.training, **changes))


def test_training_registers_a_version_under_its_alias(
    registry: FeatureRegistry, warehouse, tracking_uri: str, tmp_path
) -> None:
    model = registry.model("fraud_detector")
    record = train_model(model, registry, warehouse.read_sql, tracking_uri)

    assert isinstance(record, TrainingRecord)
    assert (record.registered_name, record.version, record.alias) == ("fraud_detector", 1, "production")
    assert record.input_tables == FRAUD_INPUTS
    assert record.input_row_counts == {name: 1500 for name in FRAUD_INPUTS}
    assert 0.5 < record.metrics["roc_auc"] <= 1.0
    assert record.metrics["rows_used"] == 1500
    assert record.start_ms <= record.end_ms
    assert build_training_query(model, registry).sql not in warehouse.queries, "features are read through Feast"

    client = _client(tracking_uri)
    version = client.get_model_version_by_alias("fraud_detector", "production")
    # The SQL store returns versions as int, the REST store as str.
    assert (int(version.version), version.run_id) == (1, record.run_id)
    assert (version.current_stage, client.get_registered_model("fraud_detector").tags) == ("None", {}), (
        "the alias alone, as a stock MLflow user sets it: no stage, no mirrored tag"
    )

    run = client.get_run(record.run_id)
    assert run.info.status == "FINISHED"
    assert run.info.experiment_id == record.experiment_id
    assert client.get_experiment(record.experiment_id).name == "fraud_detector"
    assert run.data.params["estimator"] == model.estimator_class
    inputs = {d.dataset.name: d.dataset for d in run.inputs.dataset_inputs}
    assert set(inputs) == {f"warehouse.{name}" for name in FRAUD_INPUTS}
    assert {d.source_type for d in inputs.values()} == {"postgres"}
    assert {a.path for a in client.list_artifacts(record.run_id)} == {"evaluation", "model", "training_query.sql"}
    holdout = pd.read_parquet(client.download_artifacts(record.run_id, "evaluation/holdout.parquet", str(tmp_path)))
    assert list(holdout.columns) == [*(f.name for f in model.features), "label"], "the model's inputs, then the label"
    assert len(holdout) == record.metrics["rows_test"], "the rows the run's metrics were scored on"

    scorer = mlflow.sklearn.load_model(version.source)
    rows = warehouse.read_sql(
        "SELECT amount AS txn_amount, hour_of_day AS txn_hour_of_day, unit_price AS order_unit_price,"
        " amount_to_price_ratio, 0.9 AS device_ip_risk_score, 1.0 AS device_is_emulator"
        " FROM marts.fct_transactions LIMIT 3"
    )
    assert scorer.predict_proba(rows).shape == (3, 2)


def test_retraining_moves_the_alias_to_version_2(registry: FeatureRegistry, warehouse, tracking_uri: str) -> None:
    model = registry.model("fraud_detector")
    first = train_model(model, registry, warehouse.read_sql, tracking_uri)
    second = train_model(model, registry, warehouse.read_sql, tracking_uri)

    assert (first.version, second.version) == (1, 2)
    assert second.experiment_id == first.experiment_id
    assert second.metrics == first.metrics  # seeded end to end
    client = _client(tracking_uri)
    assert int(client.get_model_version_by_alias("fraud_detector", "production").version) == 2
    assert client.get_model_version("fraud_detector", "1").aliases == []


def test_null_features_are_dropped_and_counted(registry: FeatureRegistry, warehouse, tracking_uri: str) -> None:
    warehouse.conn.execute("UPDATE marts.fct_device_features SET ip_risk_score = NULL WHERE transaction_id <= 40")
    warehouse.conn.execute("DELETE FROM marts.fct_device_features WHERE transaction_id BETWEEN 41 AND 60")
    record = train_model(registry.model("fraud_detector"), registry, warehouse.read_sql, tracking_uri)

    assert record.metrics["rows_read"] == 1500
    assert record.metrics["rows_dropped_null_features"] == 60
    assert record.metrics["rows_used"] == 1440
    assert record.input_row_counts["marts.fct_device_features"] == 1480


def test_large_inputs_are_subsampled_deterministically(registry: FeatureRegistry, warehouse, tracking_uri: str) -> None:
    model = _with_training(registry.model("fraud_detector"), max_rows=500)
    first = train_model(model, registry, warehouse.read_sql, tracking_uri)
    second = train_model(model, registry, warehouse.read_sql, tracking_uri)

    assert first.metrics["rows_used"] == 500
    assert first.metrics["rows_train"] + first.metrics["rows_test"] == 500
    assert first.metrics == second.metrics


def test_now_ms_sets_the_run_clock(registry: FeatureRegistry, warehouse, tracking_uri: str) -> None:
    now_ms = 1_700_000_000_000
    wall_ms = int(time.time() * 1000)
    record = train_model(registry.model("churn_predictor"), registry, warehouse.read_sql, tracking_uri, now_ms=now_ms)

    assert record.start_ms == now_ms <= record.end_ms
    assert record.end_ms < wall_ms, "the run's end follows the injected clock, not the wall clock"


def test_churn_and_demand_models_train(registry: FeatureRegistry, warehouse, tracking_uri: str) -> None:
    churn = train_model(registry.model("churn_predictor"), registry, warehouse.read_sql, tracking_uri)
    demand = train_model(registry.model("demand_forecaster"), registry, warehouse.read_sql, tracking_uri)

    assert churn.input_tables == ("staging.stg_churn_labels", "marts.dim_customers")
    assert churn.metrics["roc_auc"] > 0.6
    assert demand.input_tables == ("marts.fct_daily_demand",)
    assert demand.alias == "staging"
    assert {"rmse", "mae", "r2"} <= set(demand.metrics)
    assert demand.metrics["rows_test"] == 72  # latest 20% of 360 category-days, held out in time
    version = _client(tracking_uri).get_model_version_by_alias("demand_forecaster", "staging")
    assert int(version.version) == demand.version


def test_unusable_data_fails_the_run_and_registers_nothing(
    registry: FeatureRegistry, warehouse, tracking_uri: str
) -> None:
    warehouse.conn.execute("UPDATE marts.fct_device_features SET is_emulator = NULL")
    with pytest.raises(TrainingDataError, match="only 0 usable rows out of 1500"):
        train_model(registry.model("fraud_detector"), registry, warehouse.read_sql, tracking_uri)

    client = _client(tracking_uri)
    experiment = client.get_experiment_by_name("fraud_detector")
    [run] = client.search_runs([experiment.experiment_id])
    assert run.info.status == "FAILED"
    assert client.search_model_versions("name = 'fraud_detector'") == []


def test_non_numeric_values_name_the_feature(registry: FeatureRegistry, warehouse, tracking_uri: str) -> None:
    warehouse.conn.execute("UPDATE marts.fct_transactions SET hour_of_day = 'night' WHERE transaction_id = 7")
    with pytest.raises(TrainingDataError, match=r"feature txn_hour_of_day \(fct_transactions.hour_of_day, ORDINAL\)"):
        train_model(registry.model("fraud_detector"), registry, warehouse.read_sql, tracking_uri)
