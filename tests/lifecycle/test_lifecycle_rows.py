"""Live row counts through any SQLAlchemy URL, keyed by the dataset's identity; skipped with the reason."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from recall_dagster.lifecycle.rows import identity, sql_row_counter

ORDERS = "urn:li:dataset:(urn:li:dataPlatform:sqlite,main.orders,PROD)"
PG = "urn:li:dataset:(urn:li:dataPlatform:postgres,shop.public.orders,PROD)"


def _database(tmp_path: Path) -> str:
    path = tmp_path / "shop.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE orders (id integer)")
        conn.executemany("INSERT INTO orders VALUES (?)", [(i,) for i in range(7)])
    return f"sqlite:///{path}"


def test_identity_is_platform_and_name() -> None:
    assert identity(PG) == "postgres:shop.public.orders"
    assert identity("urn:li:mlModel:nope") is None


def test_a_matching_connection_counts_the_table(tmp_path: Path) -> None:
    counter = sql_row_counter((("sqlite:*", _database(tmp_path)),))
    assert counter({"main.orders": [ORDERS]}).counts == {"main.orders": 7}


def test_the_url_may_come_from_the_environment_and_an_unset_one_is_a_reason(tmp_path: Path) -> None:
    counter = sql_row_counter((("sqlite:*", "env:SHOP_URL"),), environ={"SHOP_URL": _database(tmp_path)})
    assert counter({"main.orders": [ORDERS]}).counts == {"main.orders": 7}
    unset = sql_row_counter((("sqlite:*", "env:SHOP_URL"),), environ={})({"main.orders": [ORDERS]})
    assert unset.counts == {} and unset.skipped == {"main.orders": "sqlite:main.orders: SHOP_URL is not set"}


def test_no_connection_or_an_unreachable_one_skips_with_the_reason(tmp_path: Path) -> None:
    none = sql_row_counter((("postgres:*", "env:X"),), environ={})({"main.orders": [ORDERS]})
    assert none.skipped["main.orders"] == "no connection in lifecycle.row_counts or the dbt profile matches sqlite:main.orders"
    broken = sql_row_counter((("sqlite:*", f"sqlite:///{tmp_path}/missing/dir/x.db"),))({"main.orders": [ORDERS]})
    assert broken.counts == {} and "OperationalError" in broken.skipped["main.orders"]


def test_a_postgres_url_naming_no_driver_opens_with_psycopg2_where_psycopg_is_not_installed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLAlchemy 2.1 takes psycopg (3) for ``postgresql://`` where 2.0 took psycopg2, which the postgres extra
    brings: the same URL keeps reading the same warehouse."""
    import importlib.util

    from recall_dagster.lifecycle import rows

    real = importlib.util.find_spec
    installed = {"psycopg2"}
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: object() if name in installed else (None if name == "psycopg" else real(name, *a)))
    url = "postgresql://analyst:p%40ss@db.shop.example:5432/analytics"
    opened = rows.engine_url(url)
    assert opened.drivername == "postgresql+psycopg2" and opened.password == "p@ss" and opened.database == "analytics"
    assert rows.engine_url("postgresql+psycopg://db/analytics") == "postgresql+psycopg://db/analytics", "a named driver"
    assert rows.engine_url("duckdb:///shop.duckdb") == "duckdb:///shop.duckdb"
    installed.add("psycopg")
    assert rows.engine_url(url) == url, "with psycopg installed, SQLAlchemy's own choice stands"
