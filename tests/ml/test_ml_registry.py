"""The feature registry loads the demo estate and rejects broken files with a message naming the entry."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml

from ml_models import DEFAULT_REGISTRY_PATH, FeatureRegistry, load_registry
from recall_dagster.errors import ConfigError

OWNERSHIP_PATH = DEFAULT_REGISTRY_PATH.with_name("ownership.yaml")
Edit = Callable[[dict[str, Any]], None]


def _model(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return next(m for m in doc["models"] if m["name"] == name)


def _feature_table(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return next(t for t in doc["feature_tables"] if t["name"] == name)


def _write(tmp_path: Path, edit_registry: Edit | None = None, edit_ownership: Edit | None = None) -> Path:
    registry = yaml.safe_load(DEFAULT_REGISTRY_PATH.read_text())
    ownership = yaml.safe_load(OWNERSHIP_PATH.read_text())
    if edit_registry:
        edit_registry(registry)
    if edit_ownership:
        edit_ownership(ownership)
    (tmp_path / "ownership.yaml").write_text(yaml.safe_dump(ownership))
    path = tmp_path / "feature_registry.yaml"
    path.write_text(yaml.safe_dump(registry))
    return path


def test_demo_registry_declares_three_models(registry: FeatureRegistry) -> None:
    fraud = registry.model("fraud_detector")
    assert [f.name for f in fraud.features] == [
        "txn_amount",
        "txn_hour_of_day",
        "order_unit_price",
        "amount_to_price_ratio",
        "device_ip_risk_score",
        "device_is_emulator",
    ]
    assert {(f.source.model, f.source.column) for f in fraud.features} >= {
        ("fct_transactions", "amount"),
        ("fct_device_features", "ip_risk_score"),
    }
    assert fraud.keys == ("transaction_id",)
    assert [(d.name, d.status) for d in fraud.deployments] == [
        ("fraud-api-eu", "IN_SERVICE"),
        ("fraud-api-us", "IN_SERVICE"),
    ]
    assert registry.model("churn_predictor").alias == "production"
    demand = registry.model("demand_forecaster")
    assert demand.alias == "staging"
    assert all(d.status != "IN_SERVICE" for d in demand.deployments)
    day = next(f for f in demand.features if f.name == "day_of_week")
    assert (day.source.column, day.transform) == ("order_date", "day_of_week")


def test_ownership_is_attached_to_warehouse_tables(registry: FeatureRegistry) -> None:
    customers = registry.table("dim_customers")
    assert customers.column_terms["email"] == ("urn:li:glossaryTerm:PII",)
    assert customers.owners[0].type == "TECHNICAL_OWNER"
    assert registry.warehouse_name(customers) == "warehouse.marts.dim_customers"


def test_unknown_model_is_a_config_error(registry: FeatureRegistry) -> None:
    with pytest.raises(ConfigError, match="no model 'nope'"):
        registry.model("nope")


def _append_feature(doc: dict[str, Any], table: str, feature: dict[str, Any]) -> None:
    _feature_table(doc, table)["features"].append(feature)


REGISTRY_ERRORS: list[tuple[str, Edit, str]] = [
    (
        "unknown feature referenced",
        lambda d: _model(d, "fraud_detector")["features"].append("txn_amt"),
        "models[fraud_detector].features: unknown feature 'txn_amt'",
    ),
    (
        "duplicate feature in a table",
        lambda d: _append_feature(
            d, "fraud_transaction_features", copy.deepcopy(_feature_table(d, "fraud_transaction_features")["features"][0])
        ),
        "duplicate feature 'txn_amount' in fraud_transaction_features",
    ),
    (
        "duplicate model",
        lambda d: d["models"].append(copy.deepcopy(_model(d, "churn_predictor"))),
        "duplicate model 'churn_predictor'",
    ),
    (
        "duplicate registered name",
        lambda d: _model(d, "churn_predictor").update(registered_name="fraud_detector"),
        "models[churn_predictor]: registered name 'fraud_detector' is already used",
    ),
    (
        "duplicate feature table",
        lambda d: d["feature_tables"].append(copy.deepcopy(_feature_table(d, "customer_features"))),
        "duplicate feature table 'customer_features'",
    ),
    (
        "missing source column",
        lambda d: _feature_table(d, "fraud_transaction_features")["features"][0]["source"].update(column="amount_usd"),
        "feature_tables[fraud_transaction_features].features[txn_amount].source: fct_transactions has no column 'amount_usd'",
    ),
    (
        "event time missing from the feature table's home",
        lambda d: _feature_table(d, "fraud_transaction_features").update(event_time="happened_at"),
        "feature_tables[fraud_transaction_features].event_time: fct_transactions has no column 'happened_at'",
    ),
    (
        "feature named like its entity key (Feast serves both under one name)",
        lambda d: _feature_table(d, "demand_features")["features"][2].update(name="category"),
        "feature 'category' shares its name with an entity key of demand_features",
    ),
    (
        "unknown source table",
        lambda d: _feature_table(d, "customer_features")["features"][0]["source"].update(model="dim_users"),
        "unknown warehouse table 'dim_users'",
    ),
    (
        "bad deployment status",
        lambda d: _model(d, "fraud_detector")["deployments"][0].update(status="RUNNING"),
        "models[fraud_detector].deployments[fraud-api-eu].status: 'RUNNING' is not one of",
    ),
    (
        "deployment serves an alias training never sets",
        lambda d: _model(d, "churn_predictor")["deployments"][0].update(serves="prod"),
        "serves alias 'prod' but training sets alias 'production'",
    ),
    (
        "deployment declared twice",
        lambda d: _model(d, "churn_predictor")["deployments"][0].update(name="fraud-api-eu"),
        "deployment 'fraud-api-eu' is declared twice",
    ),
    (
        "misspelt key",
        lambda d: _feature_table(d, "customer_features")["features"][0].update(desc="typo"),
        "features[tenure_days]: unknown key(s) 'desc'",
    ),
    (
        "feature type DataHub does not know",
        lambda d: _feature_table(d, "customer_features")["features"][0].update(type="FLOAT"),
        "features[tenure_days].type: 'FLOAT' is not one of",
    ),
    (
        "unknown transform",
        lambda d: _feature_table(d, "demand_features")["features"][3].update(transform="weekday"),
        "unknown transform 'weekday'",
    ),
    (
        "column that is not an identifier",
        lambda d: d["warehouse"]["tables"]["fct_orders"]["columns"].append("status; drop table x"),
        "warehouse.tables[fct_orders].columns: 'status; drop table x' is not a lower-case identifier",
    ),
    (
        "feature tables with different keys",
        lambda d: _model(d, "fraud_detector")["feature_tables"].append("customer_features"),
        "must share entity keys",
    ),
    (
        "label table without the entity key",
        lambda d: _model(d, "churn_predictor").update(label={"model": "stg_fraud_labels", "column": "is_fraud"}),
        "models[churn_predictor].label: stg_fraud_labels lacks entity key column(s) customer_id",
    ),
    (
        "split on a column that is not a key",
        lambda d: _model(d, "demand_forecaster")["training"].update(split_by="units_sold"),
        "models[demand_forecaster].training.split_by: must be one of the entity keys",
    ),
    (
        "feature that is the label",
        lambda d: (
            _append_feature(
                d,
                "fraud_transaction_features",
                {
                    "name": "leak",
                    "source": {"model": "stg_fraud_labels", "column": "is_fraud"},
                    "type": "BINARY",
                    "description": "the answer",
                },
            ),
            _model(d, "fraud_detector")["features"].append("leak"),
        ),
        "feature 'leak' reads the label column stg_fraud_labels.is_fraud",
    ),
    (
        "owner type DataHub does not know",
        lambda d: _model(d, "fraud_detector")["owners"][0].update(type="DATA_OWNER"),
        "models[fraud_detector].owners[0].type: 'DATA_OWNER' is not one of",
    ),
    (
        "unsupported version",
        lambda d: d.update(version=2),
        "version: unsupported version 2",
    ),
]


@pytest.mark.parametrize("edit, message", [c[1:] for c in REGISTRY_ERRORS], ids=[c[0] for c in REGISTRY_ERRORS])
def test_registry_errors_name_file_and_entry(tmp_path: Path, edit: Edit, message: str) -> None:
    path = _write(tmp_path, edit_registry=edit)
    with pytest.raises(ConfigError) as caught:
        load_registry(path)
    assert str(caught.value).startswith(f"{path}: ")
    assert message in str(caught.value)


OWNERSHIP_ERRORS: list[tuple[str, Edit, str]] = [
    (
        "table not declared in the registry",
        lambda d: d["datasets"].update(fct_refunds={"owners": []}),
        "datasets[fct_refunds]: unknown warehouse table 'fct_refunds'",
    ),
    (
        "column the table does not have",
        lambda d: d["datasets"]["dim_customers"]["columns"].update(phone={"glossary_terms": []}),
        "dim_customers has no column 'phone'",
    ),
    (
        "owner id that is not a user or group",
        lambda d: d["datasets"]["fct_orders"]["owners"][0].update(id="sofia"),
        "datasets[fct_orders].owners[0].id: 'sofia' is not a urn:li:corpuser:",
    ),
    (
        "glossary term that is not a term URN",
        lambda d: d["datasets"]["fct_orders"].update(glossary_terms=["Revenue"]),
        "datasets[fct_orders].glossary_terms: 'Revenue' is not a urn:li:glossaryTerm:",
    ),
]


@pytest.mark.parametrize("edit, message", [c[1:] for c in OWNERSHIP_ERRORS], ids=[c[0] for c in OWNERSHIP_ERRORS])
def test_ownership_errors_name_file_and_entry(tmp_path: Path, edit: Edit, message: str) -> None:
    path = _write(tmp_path, edit_ownership=edit)
    with pytest.raises(ConfigError) as caught:
        load_registry(path)
    assert str(caught.value).startswith(f"{tmp_path / 'ownership.yaml'}: ")
    assert message in str(caught.value)


def test_missing_and_malformed_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="file not found"):
        load_registry(tmp_path / "absent.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("models: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid yaml"):
        load_registry(broken)
