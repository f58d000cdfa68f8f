"""On the demo's PostgreSQL (from pgserver): a replayed training query that is not one read is refused by name,
a write that passed any check fails on the read-only transaction, and the server stops a statement at the read
timeout. Left out of a team's environment, which has no embedded warehouse (scripts/team_envs.py)."""

from __future__ import annotations

import shutil
import time
from typing import Iterator

import pandas as pd
import pytest
import sqlalchemy
from replays import ROWS, Registry, made_registry

from recall_dagster.impact.models import ModelUnavailable, Subject
from recall_dagster.read_only_sql import ReadTimedOut, database_error, sql_connection
from seed.stack.warehouse import Warehouse, ensure_warehouse, stop_warehouse
from tests.stack_homes import fresh_settings



pytestmark = pytest.mark.slow  # a Postgres server for each worker: `make test-slow`

@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Registry:
    return made_registry(tmp_path_factory)


@pytest.fixture(scope="module")
def postgres() -> Iterator[Warehouse]:
    """The demo's embedded PostgreSQL in a home of its own, holding table ``t``."""
    settings = fresh_settings("recall-read-only-")
    try:
        warehouse = ensure_warehouse(settings)
        with warehouse.connect() as conn, conn.cursor() as cur:
            cur.execute("CREATE TABLE t (x float, label int, note text)")
            cur.executemany("INSERT INTO t VALUES (%s, %s, %s)", ROWS.itertuples(index=False))
        yield warehouse
    finally:
        stop_warehouse(settings)
        shutil.rmtree(settings.home, ignore_errors=True)


def pg_rows(warehouse: Warehouse) -> int:
    """How many rows table ``t`` holds now; -1 when it is gone."""
    with warehouse.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT to_regclass('public.t')")
        if cur.fetchone()[0] is None:
            return -1
        cur.execute("SELECT count(*) FROM t")
        return cur.fetchone()[0]


@pytest.mark.stack
@pytest.mark.parametrize("sql, named", [("SELECT 1 AS x; DROP TABLE t", "2 statements (SELECT, DROP)"),
                                       ("COMMIT; DROP TABLE t", "2 statements (COMMIT, DROP)")])
def test_on_postgres_a_second_statement_is_refused_and_the_table_stays(
    registry: Registry, postgres: Warehouse, sql: str, named: str,
) -> None:
    refused, run_id = registry.replay(postgres.url, sql)
    assert isinstance(refused, ModelUnavailable)
    assert f"refused to run the training query training_query.sql of run {run_id}" in str(refused)
    assert named in str(refused)
    assert pg_rows(postgres) == len(ROWS)


@pytest.mark.stack
def test_on_postgres_a_writable_cte_that_passed_any_check_is_refused_by_the_read_only_transaction(
    postgres: Warehouse,
) -> None:
    with sql_connection(postgres.url) as conn, pytest.raises(Exception, match="read-only transaction") as refused:
        pd.read_sql_query(sqlalchemy.text("WITH gone AS (DELETE FROM t RETURNING *) SELECT * FROM gone"), conn)
    assert isinstance(database_error(refused.value), sqlalchemy.exc.InternalError), "pandas 3 wraps it in its own"
    assert pg_rows(postgres) == len(ROWS)


@pytest.mark.stack
def test_on_postgres_the_training_query_is_replayed_on_a_read_only_connection(
    registry: Registry, postgres: Warehouse,
) -> None:
    subject, _ = registry.replay(postgres.url, "SELECT x, label FROM t WHERE note <> 'a;b' ORDER BY x")
    assert isinstance(subject, Subject), subject
    with sql_connection(postgres.url) as conn:
        assert conn.exec_driver_sql("SHOW transaction_read_only").scalar() == "on"


@pytest.mark.stack
def test_on_postgres_a_statement_past_the_read_timeout_is_stopped_by_the_server(postgres: Warehouse) -> None:
    started = time.monotonic()
    with pytest.raises(ReadTimedOut, match=r"^ran past the read timeout of 0\.2 s and was stopped$"):
        with sql_connection(postgres.url, timeout_s=0.2) as conn:
            pd.read_sql_query(sqlalchemy.text("SELECT pg_sleep(5)"), conn)
    assert time.monotonic() - started < 4
    with postgres.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(5)' AND state = 'active'")
        assert cur.fetchone() == (0,), "the server stopped the statement, not only Recall's wait for it"
