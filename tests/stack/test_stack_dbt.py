"""dbt against the embedded warehouse: healthy builds pass, injuries fail real tests, failures are data."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest

from recall_dagster.errors import ServiceUnreachable
from recall_dagster.settings import Settings
from seed.stack.dbt import PROJECT_DIR, dbt_build, dbt_docs_generate, dbt_source_freshness
from seed.stack.warehouse import Warehouse
from seed.generate import load_raw

pytestmark = pytest.mark.stack

NOW = datetime.now(timezone.utc).replace(second=0, microsecond=0)  # freshness is judged by the real clock
AS_OF = {"as_of": NOW.date().isoformat()}
MARTS = {
    "fct_orders": ["order_id", "customer_id", "product_id", "category", "quantity", "unit_price",
                   "order_amount", "order_date", "ordered_at", "status"],
    "fct_transactions": ["transaction_id", "order_id", "customer_id", "amount", "payment_method",
                         "merchant_category", "hour_of_day", "unit_price", "amount_to_price_ratio", "occurred_at"],
    "dim_customers": ["customer_id", "email", "country", "segment", "tenure_days", "lifetime_orders",
                      "lifetime_spend", "days_since_last_order"],
    "fct_device_features": ["transaction_id", "ip_risk_score", "is_emulator", "session_seconds", "loaded_at"],
    "fct_device_features_v2": ["transaction_id", "ip_risk_score", "is_emulator", "session_seconds",
                               "device_trust_score"],
    "fct_daily_demand": ["order_date", "category", "units_sold", "revenue", "avg_unit_price", "order_count"],
}
STAGING = ["stg_churn_labels", "stg_customers", "stg_device_signals", "stg_device_signals_v2",
           "stg_fraud_labels", "stg_orders", "stg_products", "stg_transactions"]


@pytest.fixture()
def healthy_raw(warehouse: Warehouse) -> Iterator[Warehouse]:
    """A small healthy raw layer, reloaded afterwards so an injury never leaks into the next test."""
    load_raw(warehouse, NOW, scale=0.05)
    yield warehouse
    load_raw(warehouse, NOW, scale=0.05)


def execute(warehouse: Warehouse, statement: str) -> list[tuple]:
    with warehouse.connect() as conn, conn.cursor() as cur:
        cur.execute(statement)
        return cur.fetchall() if cur.description else []


def test_healthy_build_passes_every_test_and_builds_the_contract(
    stack_settings: Settings, healthy_raw: Warehouse
) -> None:
    summary = dbt_build(stack_settings, healthy_raw, vars=AS_OF)
    assert summary.success and summary.failing_tests == ()
    assert summary.counts["model"] == {"success": len(MARTS) + len(STAGING)}
    assert set(summary.counts["test"]) == {"pass"} and summary.counts["test"]["pass"] >= 40
    rows = execute(healthy_raw, """
        SELECT table_schema, table_name, array_agg(column_name::text ORDER BY ordinal_position)
        FROM information_schema.columns WHERE table_schema IN ('staging', 'marts')
        GROUP BY table_schema, table_name
    """)
    assert {name: cols for schema, name, cols in rows if schema == "marts"} == MARTS
    assert sorted(name for schema, name, _ in rows if schema == "staging") == STAGING

    artifacts = dbt_docs_generate(stack_settings, healthy_raw, vars=AS_OF)
    assert "model.recall_warehouse.fct_orders" in json.loads(artifacts.catalog.read_text())["nodes"]
    kept = json.loads(artifacts.run_results.read_text())
    assert kept["args"]["which"] == "build", "the build's test results survive docs generate"
    assert any(r["unique_id"].startswith("test.") for r in kept["results"])
    assert not any((PROJECT_DIR / leftover).exists() for leftover in ("target", "logs", ".user.yml"))


def test_as_of_var_pins_day_counts(stack_settings: Settings, healthy_raw: Warehouse) -> None:
    later = {"as_of": (NOW.date() + timedelta(days=10)).isoformat()}
    tenure = "SELECT sum(tenure_days)::bigint, count(*) FROM marts.dim_customers"
    assert dbt_build(stack_settings, healthy_raw, vars=AS_OF).success
    (base, customers), = execute(healthy_raw, tenure)
    assert dbt_build(stack_settings, healthy_raw, vars=later, select="dim_customers").success
    assert execute(healthy_raw, tenure) == [(base + 10 * customers, customers)]


def test_null_prices_fail_the_not_null_tests_by_name(stack_settings: Settings, healthy_raw: Warehouse) -> None:
    execute(healthy_raw, "UPDATE raw.orders SET unit_price = NULL WHERE order_id % 40 = 0")
    summary = dbt_build(stack_settings, healthy_raw, vars=AS_OF)
    assert not summary.success
    assert "not_null_fct_orders_unit_price" in summary.failing_tests
    assert all(name.startswith("not_null_") and name.endswith("_unit_price") for name in summary.failing_tests)
    assert summary.counts["test"]["fail"] == len(summary.failing_tests)


def test_a_source_40_days_stale_is_a_freshness_error(stack_settings: Settings, healthy_raw: Warehouse) -> None:
    assert set(dbt_source_freshness(stack_settings, healthy_raw).statuses.values()) == {"pass"}
    execute(healthy_raw, "UPDATE raw.device_signals SET _loaded_at = _loaded_at - interval '40 days'")
    summary = dbt_source_freshness(stack_settings, healthy_raw)
    assert not summary.success
    assert summary.with_status("error") == ["source.recall_warehouse.raw.device_signals"]
    assert summary.counts["source"] == {"pass": 7, "error": 1}


def test_dbt_that_cannot_reach_the_warehouse_raises(stack_settings: Settings, warehouse: Warehouse) -> None:
    nowhere = replace(warehouse, host=str(stack_settings.home / "no-such-socket-dir"))
    with pytest.raises(ServiceUnreachable, match="no-such-socket-dir"):
        dbt_build(stack_settings, nowhere)
