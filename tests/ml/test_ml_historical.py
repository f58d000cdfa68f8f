"""Training's rows come from Feast's point-in-time join, staged from the registry training uses: on the SQLite
stand-in warehouse, and on the embedded PostgreSQL with its own types (``timestamptz``, ``date``)."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta, timezone
from typing import Callable, Iterator

import numpy as np
import pandas as pd
import pytest
import sqlalchemy
from stack_homes import fresh_settings

from ml_models import Feature, FeatureRegistry
from ml_models.feature_store import typed_feature
from ml_models.fit import TrainingDataError
from ml_models.historical import training_rows
from ml_models.query import build_training_query, feature_column
from recall_dagster.read_only_sql import engine_url
from ml_models.train import evaluate_model
from seed.stack.warehouse import ensure_warehouse, stop_warehouse

NOW = datetime(2024, 3, 2, tzinfo=timezone.utc)
LOADED_FROM = datetime(2024, 1, 5, tzinfo=timezone.utc)  # device rows land a minute apart from here, by id
ReadSql = Callable[[str], pd.DataFrame]


@pytest.fixture(scope="session")
def postgres(stand_in_tables: dict[str, pd.DataFrame]) -> Iterator[sqlalchemy.Engine]:
    """The stand-in tables in an embedded PostgreSQL, typed as dbt would build them, device rows stamped
    with when they were loaded."""
    settings = fresh_settings("recall-feast-pg-")
    engine = sqlalchemy.create_engine(engine_url(ensure_warehouse(settings).url))
    typed = {name: frame.copy() for name, frame in stand_in_tables.items()}
    transactions, devices, demand = (typed[f"marts.{t}"] for t in ("fct_transactions", "fct_device_features",
                                                                   "fct_daily_demand"))
    transactions["occurred_at"] = pd.to_datetime(transactions["occurred_at"], utc=True)
    devices["loaded_at"] = LOADED_FROM + pd.to_timedelta(devices["transaction_id"], unit="min")
    demand["order_date"] = pd.to_datetime(demand["order_date"]).dt.date
    with engine.begin() as conn:
        for schema in ("marts", "staging"):
            conn.execute(sqlalchemy.text(f"CREATE SCHEMA IF NOT EXISTS {schema}"))
        for name, frame in typed.items():
            schema, table = name.split(".")
            frame.to_sql(table, conn, schema=schema, index=False, if_exists="replace")
    try:
        yield engine
    finally:
        engine.dispose()
        stop_warehouse(settings)


def _on_postgres(engine: sqlalchemy.Engine) -> ReadSql:
    def read_sql(sql: str) -> pd.DataFrame:
        with engine.connect() as conn:
            return pd.read_sql(sqlalchemy.text(sql), conn)

    return read_sql


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.slow)])  # Postgres: make test-slow
def read_sql(request: pytest.FixtureRequest) -> ReadSql:
    if request.param == "sqlite":
        return request.getfixturevalue("warehouse").read_sql
    return _on_postgres(request.getfixturevalue("postgres"))


@pytest.mark.parametrize("name", ["fraud_detector", "churn_predictor", "demand_forecaster"])
def test_feast_returns_for_every_labelled_row_what_joining_the_warehouse_gives_typed_as_served(
    registry: FeatureRegistry, read_sql: ReadSql, name: str
) -> None:
    model = registry.model(name)
    query = build_training_query(model, registry)
    joined = read_sql(query.sql)
    asked: list[str] = []
    rows = training_rows(model, registry, lambda sql: asked.append(sql) or read_sql(sql), NOW)

    assert query.sql not in asked, "training does not join the tables itself"
    assert len(rows.served) == len(rows.read) == len(joined) > 0
    for feature in model.features:
        column = feature_column(feature.name)
        expected = typed_feature(joined[column], feature, name).reset_index(drop=True)
        pd.testing.assert_series_equal(rows.served[column], expected, check_names=False, check_dtype=False)
        pd.testing.assert_series_equal(rows.read[column], joined[column], check_names=False)
    pd.testing.assert_series_equal(rows.served[query.label_column], joined[query.label_column])


def test_each_labelled_row_is_asked_about_at_the_moment_of_its_own_event(registry: FeatureRegistry, warehouse) -> None:
    """A label asked about at one instant for all rows would miss every transaction that happened later."""
    transactions = warehouse.read_sql("SELECT * FROM marts.fct_transactions")
    stamps = pd.Timestamp("2024-01-01") + pd.to_timedelta(transactions["transaction_id"], unit="h")
    transactions["occurred_at"] = stamps.dt.strftime("%Y-%m-%dT%H:%M:%S")
    warehouse.put("marts.fct_transactions", transactions)
    rows = training_rows(registry.model("fraud_detector"), registry, warehouse.read_sql, NOW)

    served = rows.served[feature_column("txn_amount")]
    assert served.notna().all()
    assert np.allclose(served, transactions.sort_values("transaction_id")["amount"])


def test_a_labelled_entity_the_view_lacks_gets_no_features(registry: FeatureRegistry, warehouse) -> None:
    warehouse.conn.execute("DELETE FROM marts.fct_transactions WHERE transaction_id <= 25")
    rows = training_rows(registry.model("fraud_detector"), registry, warehouse.read_sql, NOW)

    missing = rows.served[feature_column("txn_amount")].isna()
    assert len(rows.served) == 1500 and int(missing.sum()) == 25
    assert set(rows.served.loc[missing, "key__transaction_id"]) == set(range(1, 26))


def test_a_view_with_several_rows_for_one_entity_stops_training_naming_it(registry: FeatureRegistry, warehouse) -> None:
    transactions = warehouse.read_sql("SELECT * FROM marts.fct_transactions")
    warehouse.put("marts.fct_transactions", pd.concat([transactions, transactions.head(1)]))
    with pytest.raises(TrainingDataError, match=r"feature view fraud_transaction_features holds several rows "
                                                r"for one entity \(transaction_id=1\)"):
        training_rows(registry.model("fraud_detector"), registry, warehouse.read_sql, NOW)


def test_features_are_computed_by_the_code_of_the_registry_training_uses(registry: FeatureRegistry, warehouse) -> None:
    """A scenario changes a feature's code for training alone: the staged views follow that registry."""
    def recoded(feature: Feature) -> Feature:
        return dataclasses.replace(feature, transform="ip_trust") if feature.name == "device_ip_risk_score" else feature

    changed = dataclasses.replace(registry, feature_tables=tuple(
        dataclasses.replace(t, features=tuple(recoded(f) for f in t.features)) for t in registry.feature_tables
    ))
    [feature] = [recoded(f) for f in registry.model("fraud_detector").features if f.name == "device_ip_risk_score"]
    column = feature_column(feature.name)
    rows = training_rows(changed.model("fraud_detector"), changed, warehouse.read_sql, NOW)
    plain = training_rows(registry.model("fraud_detector"), registry, warehouse.read_sql, NOW)

    expected = typed_feature(plain.read[column], feature, "test")
    pd.testing.assert_series_equal(rows.served[column], expected, check_names=False)
    assert not np.allclose(rows.served[column], plain.served[column], equal_nan=True)
    pd.testing.assert_series_equal(rows.read[column], plain.read[column])  # the warehouse holds the same values


def test_before_an_instant_the_offline_store_holds_only_rows_loaded_by_then(
    registry: FeatureRegistry, postgres: sqlalchemy.Engine
) -> None:
    """A retrain around a bad load: the device rows that landed later are not in the offline store, so their
    labels get no features, and the fit uses exactly the rows the warehouse held before then."""
    read_sql = _on_postgres(postgres)
    model = registry.model("fraud_detector")
    before = LOADED_FROM + timedelta(minutes=1000)
    rows = training_rows(model, registry, read_sql, NOW, before)

    missing = rows.served[feature_column("device_ip_risk_score")].isna()
    assert set(rows.served.loc[missing, "key__transaction_id"]) == set(range(1000, 1501))
    assert rows.served.loc[~missing, feature_column("txn_amount")].notna().all()
    metrics = evaluate_model(model, registry, read_sql, before)
    assert metrics["rows_used"] == len(read_sql(build_training_query(model, registry, before).sql)) == 999
