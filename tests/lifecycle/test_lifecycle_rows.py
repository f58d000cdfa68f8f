"""Live row counts through any SQLAlchemy URL, keyed by the dataset's identity; skipped with the reason."""

from __future__ import annotations

import sqlite3
from importlib.util import find_spec
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


def test_a_postgres_url_naming_no_driver_opens_with_the_driver_installed() -> None:
    """SQLAlchemy 2.1 takes psycopg (3) for ``postgresql://`` where 2.0 took psycopg2, which the postgres extra
    brings: the same URL keeps reading the same warehouse with whichever of the two is installed."""
    import sqlalchemy

    from recall_dagster.read_only_sql import engine_url

    if find_spec("psycopg") is None and find_spec("psycopg2") is None:
        pytest.skip("neither psycopg nor psycopg2 is installed (Recall's postgres extra brings psycopg2)")
    url = "postgresql://analyst:p%40ss@db.shop.example:5432/analytics"
    engine = sqlalchemy.create_engine(engine_url(url))  # imports the driver: fails where it is not installed
    assert engine.dialect.driver == ("psycopg" if find_spec("psycopg") else "psycopg2")
    assert engine.url.password == "p@ss" and engine.url.database == "analytics"
    assert str(engine_url("postgresql+psycopg://db/analytics")) == "postgresql+psycopg://db/analytics", "as named"
    assert str(engine_url("duckdb:///shop.duckdb")) == "duckdb:///shop.duckdb"
