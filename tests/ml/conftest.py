"""A SQLite stand-in for the warehouse and a throwaway MLflow, for ml_models tests.

The marts and staging schemas are attached SQLite databases, so the SQL text
train.py generates for Postgres runs here unchanged.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
import numpy as np
import pandas as pd
import pytest

from ml_models import FeatureRegistry, load_registry


class Warehouse:
    """Tables in attached ``marts`` / ``staging`` schemas, plus a log of the SQL it answered."""

    def __init__(self) -> None:
        self.conn = sqlite3.connect(":memory:")
        self.conn.execute("ATTACH DATABASE ':memory:' AS marts")
        self.conn.execute("ATTACH DATABASE ':memory:' AS staging")
        self.queries: list[str] = []

    def put(self, qualified_name: str, frame: pd.DataFrame) -> None:
        self.conn.execute(f"DROP TABLE IF EXISTS {qualified_name}")
        self.conn.execute(f"CREATE TABLE {qualified_name} ({', '.join(frame.columns)})")
        marks = ", ".join("?" for _ in frame.columns)
        rows = [tuple(None if pd.isna(v) else v for v in row) for row in frame.itertuples(index=False)]
        self.conn.executemany(f"INSERT INTO {qualified_name} VALUES ({marks})", rows)

    def read_sql(self, sql: str) -> pd.DataFrame:
        self.queries.append(sql)
        return pd.read_sql_query(sql, self.conn)


def _fraud_tables(rng: np.random.Generator, n: int) -> dict[str, pd.DataFrame]:
    ids = np.arange(1, n + 1)
    hour = rng.integers(0, 24, n)
    ip_risk = rng.beta(2, 5, n)
    emulator = rng.random(n) < 0.05
    ratio = rng.lognormal(0, 0.3, n)
    logit = -6 + 4 * ip_risk + 2.5 * emulator + 1.5 * (ratio > 1.5) + 1.0 * ((hour < 5) | (hour > 22))
    fraud = rng.random(n) < 1 / (1 + np.exp(-logit))
    fraud[:10] = True  # both classes even in tiny frames
    price = rng.uniform(5, 200, n).round(2)
    transactions = pd.DataFrame(
        {
            "transaction_id": ids,
            "order_id": ids,
            "customer_id": rng.integers(1, 300, n),
            "amount": (price * ratio).round(2),
            "payment_method": rng.choice(["card", "wallet"], n),
            "merchant_category": rng.choice(["retail", "travel"], n),
            "hour_of_day": hour,
            "unit_price": price,
            "amount_to_price_ratio": ratio.round(4),
            "occurred_at": "2024-01-01T00:00:00",
        }
    )
    devices = pd.DataFrame(
        {
            "transaction_id": ids,
            "ip_risk_score": ip_risk.round(4),
            "is_emulator": emulator.astype(int),
            "session_seconds": rng.integers(5, 900, n),
        }
    )
    labels = pd.DataFrame({"transaction_id": ids, "is_fraud": fraud.astype(int), "labeled_at": "2024-02-01"})
    return {
        "marts.fct_transactions": transactions,
        "marts.fct_device_features": devices,
        "staging.stg_fraud_labels": labels,
    }


def _churn_tables(rng: np.random.Generator, n: int) -> dict[str, pd.DataFrame]:
    ids = np.arange(1, n + 1)
    recency = rng.integers(0, 365, n)
    orders = rng.poisson(6, n)
    churned = rng.random(n) < 1 / (1 + np.exp(-(recency / 60 - orders / 3)))
    customers = pd.DataFrame(
        {
            "customer_id": ids,
            "email": [f"c{i}@example.com" for i in ids],
            "country": rng.choice(["DE", "FR", "US"], n),
            "segment": rng.choice(["consumer", "smb", "enterprise"], n),
            "tenure_days": rng.integers(30, 2000, n),
            "lifetime_orders": orders,
            "lifetime_spend": (orders * rng.uniform(20, 80, n)).round(2),
            "days_since_last_order": recency,
        }
    )
    labels = pd.DataFrame({"customer_id": ids, "churned": churned.astype(int), "as_of_date": "2024-03-01"})
    return {"marts.dim_customers": customers, "staging.stg_churn_labels": labels}


def _demand_tables(rng: np.random.Generator, days: int) -> dict[str, pd.DataFrame]:
    dates = pd.date_range("2024-01-01", periods=days, freq="D")
    rows = []
    for category, base in {"books": 40, "garden": 25, "toys": 60}.items():
        for date in dates:
            units = int(base * (1.5 if date.day_of_week >= 5 else 1.0) + rng.normal(0, 3))
            price = round(float(rng.uniform(8, 12)), 2)
            rows.append(
                {
                    "order_date": date.date().isoformat(),
                    "category": category,
                    "units_sold": units,
                    "revenue": round(units * price, 2),
                    "avg_unit_price": price,
                    "order_count": max(1, units // 2),
                }
            )
    return {"marts.fct_daily_demand": pd.DataFrame(rows)}


@pytest.fixture
def registry() -> FeatureRegistry:
    return load_registry()


@pytest.fixture(scope="session")
def stand_in_tables() -> dict[str, pd.DataFrame]:
    """The stand-in warehouse's tables by ``schema.table``, the same in every test."""
    rng = np.random.default_rng(11)
    return {**_fraud_tables(rng, 1500), **_churn_tables(rng, 400), **_demand_tables(rng, 120)}


def filled(tables: dict[str, pd.DataFrame]) -> Warehouse:
    house = Warehouse()
    for name, frame in tables.items():
        house.put(name, frame)
    return house


@pytest.fixture
def warehouse(stand_in_tables: dict[str, pd.DataFrame]) -> Warehouse:
    return filled(stand_in_tables)


@pytest.fixture(scope="module")
def module_warehouse(stand_in_tables: dict[str, pd.DataFrame]) -> Warehouse:
    """The stand-in warehouse for a module's fixtures that train once: they only read it."""
    return filled(stand_in_tables)


@pytest.fixture
def tracking_uri(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh SQLite MLflow; artifacts land beside it (see tracking.artifact_location).

    MLflow's SQL store creates an empty ``./mlruns`` in the working directory
    whatever the URI, so the test runs from its tmp dir.
    """
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mlflow").mkdir()
    return f"sqlite:///{tmp_path / 'mlflow' / 'mlflow.db'}"
