"""Training's rows come from Feast's point-in-time join, staged from the registry training uses."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timezone

import numpy as np
import pandas as pd
import pytest

from ml_models import FeatureRegistry
from ml_models.fit import TrainingDataError, typed_feature
from ml_models.historical import training_rows
from ml_models.query import build_training_query, feature_column

NOW = datetime(2024, 3, 2, tzinfo=timezone.utc)


@pytest.mark.parametrize("name", ["fraud_detector", "churn_predictor", "demand_forecaster"])
def test_feast_returns_for_every_labelled_row_what_joining_the_warehouse_gives_typed_as_served(
    registry: FeatureRegistry, warehouse, name: str
) -> None:
    model = registry.model(name)
    query = build_training_query(model, registry)
    joined = warehouse.read_sql(query.sql)
    rows = training_rows(model, registry, warehouse.read_sql, NOW)

    assert query.sql not in warehouse.queries[1:], "training does not join the tables itself"
    assert len(rows.served) == len(rows.read) == len(joined)
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
    changed = dataclasses.replace(registry, feature_tables=tuple(
        dataclasses.replace(t, features=tuple(
            dataclasses.replace(f, transform="ip_trust") if f.name == "device_ip_risk_score" else f
            for f in t.features
        )) for t in registry.feature_tables
    ))
    model = changed.model("fraud_detector")
    model = dataclasses.replace(model, features=tuple(
        dataclasses.replace(f, transform="ip_trust") if f.name == "device_ip_risk_score" else f for f in model.features
    ))
    column = feature_column("device_ip_risk_score")
    plain = training_rows(registry.model("fraud_detector"), registry, warehouse.read_sql, NOW)
    coded = training_rows(model, changed, warehouse.read_sql, NOW)

    assert not np.allclose(coded.served[column], plain.served[column], equal_nan=True)
    pd.testing.assert_series_equal(coded.read[column], plain.read[column])  # the warehouse holds the same values
