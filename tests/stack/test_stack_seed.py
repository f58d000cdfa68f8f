"""The raw layer is reproducible from (seed, scale) on any day, big enough, fresh, and carries its signals."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pandas as pd
import pytest
from psycopg2 import sql

from seed.stack.warehouse import Warehouse
from seed.generate import RAW_TABLES, TIMESTAMP_COLUMNS, generate_raw, load_raw

pytestmark = pytest.mark.stack

NOW = datetime(2026, 3, 2, 15, 30, tzinfo=timezone.utc)
TODAY = NOW.replace(hour=0, minute=0)


@pytest.fixture(scope="module")
def scratch(warehouse: Warehouse) -> Iterator[Warehouse]:
    """A database of its own, so reloading raw here never races the dbt tests' raw layer."""
    admin = warehouse.connect(database="postgres")
    admin.autocommit = True
    with admin.cursor() as cur:
        cur.execute("DROP DATABASE IF EXISTS seed_scratch")
        cur.execute("CREATE DATABASE seed_scratch")
    yield replace(warehouse, database="seed_scratch")
    with admin.cursor() as cur:
        cur.execute("DROP DATABASE seed_scratch WITH (FORCE)")
    admin.close()


def checksums(wh: Warehouse) -> dict[str, str]:
    with wh.connect() as conn, conn.cursor() as cur:
        cur.execute("SET TIME ZONE 'UTC'")
        found = {}
        for table in RAW_TABLES:
            cur.execute(sql.SQL("SELECT md5(string_agg(t::text, '|' ORDER BY t::text)) FROM raw.{} t").format(
                sql.Identifier(table)
            ))
            found[table] = cur.fetchone()[0]
        return found


def test_same_seed_and_now_load_identical_tables(scratch: Warehouse) -> None:
    first = load_raw(scratch, NOW, seed=7, scale=0.02)
    first_sums = checksums(scratch)
    assert load_raw(scratch, NOW, seed=7, scale=0.02) == first
    assert checksums(scratch) == first_sums
    load_raw(scratch, NOW, seed=8, scale=0.02)
    assert checksums(scratch)["orders"] != first_sums["orders"]


def test_any_hour_of_any_day_loads_the_same_rows_moved_by_whole_days() -> None:
    """What the models learn, and so every metric a test pins, cannot depend on when the estate was built."""
    first, later = generate_raw(NOW, scale=0.02), generate_raw(NOW + timedelta(days=9, hours=7), scale=0.02)
    assert generate_raw(TODAY, scale=0.02)["orders"].equals(first["orders"]), "the hour of the day changes nothing"
    for table, frame in first.items():
        moved = later[table]
        for column in frame.columns:
            if column in TIMESTAMP_COLUMNS:
                shift = pd.to_datetime(moved[column]) - pd.to_datetime(frame[column])
                assert (shift == pd.Timedelta(days=9)).all(), f"{table}.{column}"
            elif column != "as_of_date":
                assert moved[column].equals(frame[column]), f"{table}.{column}"


def test_scale_one_meets_the_floors_and_is_fresh(scratch: Warehouse) -> None:
    counts = load_raw(scratch, NOW)
    assert counts["customers"] == 20_000 and counts["products"] == 500
    assert 100_000 <= counts["orders"] <= 140_000
    assert counts["transactions"] >= 200_000
    assert counts["device_signals"] == counts["device_signals_v2"] > 0.9 * counts["transactions"]
    with scratch.connect() as conn, conn.cursor() as cur:
        for table, columns in RAW_TABLES.items():
            if ("_loaded_at", "timestamptz") in columns:
                cur.execute(sql.SQL("SELECT max(_loaded_at) FROM raw.{}").format(sql.Identifier(table)))
                newest = cur.fetchone()[0]
                assert TODAY - timedelta(hours=6) < newest < NOW, f"raw.{table} is not fresh at now"
        cur.execute("SELECT min(ordered_at), max(ordered_at) FROM raw.orders")
        oldest, newest = cur.fetchone()
        assert TODAY - timedelta(days=181) < oldest and newest <= TODAY - timedelta(hours=3)


def test_fraud_and_churn_labels_carry_learnable_signal(scratch: Warehouse) -> None:
    load_raw(scratch, NOW, scale=0.2)
    with scratch.connect() as conn, conn.cursor() as cur:
        cur.execute("""
            SELECT l.is_fraud, avg(d.ip_risk_score), avg(d.is_emulator::int), count(*)
            FROM raw.fraud_labels l JOIN raw.device_signals d USING (transaction_id)
            GROUP BY l.is_fraud ORDER BY l.is_fraud
        """)
        (_, clean_risk, clean_emu, clean_n), (_, fraud_risk, fraud_emu, fraud_n) = cur.fetchall()
        assert 0.01 < fraud_n / (fraud_n + clean_n) < 0.03
        assert fraud_risk > 3 * clean_risk and fraud_emu > 10 * clean_emu
        cur.execute("""
            SELECT c.churned, avg(coalesce(o.n, 0))::float
            FROM raw.churn_labels c
            LEFT JOIN (SELECT customer_id, count(*) AS n FROM raw.orders
                       WHERE ordered_at > %s - interval '30 days' GROUP BY customer_id) o USING (customer_id)
            GROUP BY c.churned ORDER BY c.churned
        """, (NOW,))
        (_, active_recent), (_, churned_recent) = cur.fetchall()
        assert churned_recent < 0.5 * active_recent
