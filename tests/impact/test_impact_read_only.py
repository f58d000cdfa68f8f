"""Recall only reads a warehouse: a replayed training query that is not one read is refused by name before it
runs, and the connections for replays and row counts cannot write and stop a statement at the read timeout,
on SQLite and DuckDB (the demo's PostgreSQL: test_impact_read_only_stack.py)."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Callable

import duckdb
import pandas as pd
import pytest
import sqlalchemy
from replays import ROWS, Registry, made_registry

from recall_dagster.impact.models import ModelUnavailable, Subject
from recall_dagster.read_only_sql import ReadTimedOut, sql_connection, why_not_a_read


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Registry:
    return made_registry(tmp_path_factory)


@pytest.fixture
def duck(tmp_path: Path) -> tuple[str, Callable[[], int]]:
    """A DuckDB warehouse holding table ``t``; and how many rows ``t`` holds now (-1: the table is gone)."""
    path = tmp_path / "warehouse.duckdb"
    with duckdb.connect(str(path)) as conn:
        conn.register("held_out", ROWS)
        conn.execute("CREATE TABLE t AS SELECT * FROM held_out")

    def rows() -> int:
        with duckdb.connect(str(path), read_only=True) as conn:
            try:
                return conn.execute("SELECT count(*) FROM t").fetchall()[0][0]
            except duckdb.CatalogException:
                return -1

    return f"duckdb:///{path}", rows


@pytest.mark.parametrize(
    "sql, named",
    [
        ("SELECT 1 AS x; DROP TABLE t", "it holds 2 statements (SELECT, DROP)"),
        ("COMMIT; DROP TABLE t", "it holds 2 statements (COMMIT, DROP)"),
        ("SELECT 1 AS x; COPY t TO '{stolen}'", "it holds 2 statements (SELECT, COPY)"),
    ],
)
def test_a_training_query_holding_a_second_statement_is_refused_by_name_and_nothing_runs(
    registry: Registry, duck: tuple[str, Callable[[], int]], tmp_path: Path, sql: str, named: str,
) -> None:
    url, rows = duck
    refused, run_id = registry.replay(url, sql.format(stolen=tmp_path / "stolen.csv"))
    assert isinstance(refused, ModelUnavailable)
    message = str(refused)
    assert message.startswith(f"Recall refused to run the training query training_query.sql of run {run_id} of ")
    assert f"on the warehouse: {named}; a training query is replayed only when it is one read statement" in message
    assert rows() == len(ROWS), "the table is there with every row"
    assert not (tmp_path / "stolen.csv").exists()


def test_a_select_with_comments_and_semicolons_in_its_strings_and_comments_is_replayed(
    registry: Registry, duck: tuple[str, Callable[[], int]],
) -> None:
    url, _ = duck
    sql = ("-- the held-out rows; as training read them\n"
           "SELECT x, /* the label; 0 or 1 */ label\n"
           "FROM t\n"
           "WHERE note <> 'a;b' AND note <> 'it''s; quoted'  -- a trailing; comment\n"
           "ORDER BY x;\n"
           "-- end;\n")
    subject, _ = registry.replay(url, sql)
    assert isinstance(subject, Subject), subject
    kept = ROWS[ROWS.note != "a;b"].sort_values("x")
    assert subject.inputs["x"].tolist() == kept.x.tolist() and subject.labels.tolist() == kept.label.tolist()


@pytest.mark.parametrize(
    "sql, refused",
    [
        ("SELECT 1", None),
        ("select a, b from s.t where c = 'x' order by a;", None),
        ("WITH w AS (SELECT 1 AS a) SELECT a FROM w;;", None),
        ("VALUES (1, 'a'), (2, 'b')", None),
        ("TABLE marts.orders", None),
        ("(SELECT 1) UNION ALL (SELECT 2)", None),
        ("/* lead; */ SELECT 'a;b', \"odd;name\" -- tail; note\n;\n-- after; all\n", None),
        ("SELECT 'it''s; fine' AS quoted", None),
        ("SELECT regexp_replace(s, '\\d+', '') FROM t", None),  # a backslash alone, with no hidden semicolon
        ("SELECT 1 --x\r\n;", None),
        ("", "it holds no statement"),
        ("; -- nothing else", "it holds no statement"),
        ("SELECT 1 AS x; DROP TABLE t", "it holds 2 statements (SELECT, DROP)"),
        ("COMMIT; DROP TABLE t", "it holds 2 statements (COMMIT, DROP)"),
        ("select 1; select 2; select 3", "it holds 3 statements (SELECT, SELECT, SELECT)"),
        ("SELECT 1 --\r; DROP TABLE t", "it holds 2 statements (SELECT, DROP)"),  # a lone CR ends a -- comment
        ("DROP TABLE t", "it is DROP, not a read"),
        ("delete from t", "it is DELETE, not a read"),
        ("EXPLAIN ANALYZE DELETE FROM t", "it is EXPLAIN, not a read"),
        ("PRAGMA query_only = 0", "it is PRAGMA, not a read"),
        ("'SELECT 1'", "it is 'SELECT 1', not a read"),
        ("WITH gone AS (DELETE FROM t RETURNING *) SELECT * FROM gone",
         "its WITH names DELETE: a read may not write or lock"),
        ("WITH a AS (SELECT 1) INSERT INTO t SELECT * FROM a", "its WITH names INSERT, INTO: a read may not"),
        ("SELECT * INTO copied FROM t", "its SELECT names INTO: a read may not write or lock"),
        ("SELECT * FROM t FOR UPDATE", "its SELECT names UPDATE: a read may not write or lock"),
        ("/* /* */ SELECT 1 */ DROP TABLE t", "it opens a comment inside a comment"),
        # Standard SQL ends the string at the second quote; MySQL, BigQuery and Snowflake read \' as a quote.
        ("SELECT '\\'; DROP TABLE t; --'", "it holds 2 statements (SELECT, DROP)"),
        ("SELECT E'\\''; DROP TABLE t; --'", "it has a semicolon inside a string or comment beside '\\\\'"),
        ("SELECT $q$ ; DROP TABLE t; $q$", "it holds 3 statements (SELECT, DROP, $)"),
        ("SELECT 1 # '\n; DROP TABLE t; -- '", "it has a semicolon inside a string or comment beside '#'"),
        ("SELECT `a;b` FROM t", "it holds 2 statements (SELECT, B)"),  # a backtick quotes nothing in standard SQL
        ("SELECT \"a\\\"; DROP TABLE t; --\"", "it holds 2 statements (SELECT, DROP)"),
    ],
)
def test_only_one_read_statement_passes_the_check(sql: str, refused: str | None) -> None:
    why = why_not_a_read(sql)
    if refused is None:
        assert why is None
    else:
        assert why is not None and why.startswith(refused), why


def test_the_check_reads_a_crafted_query_in_linear_time() -> None:
    started = time.monotonic()
    for crafted in ("SELECT " + "/* " * 40_000, "SELECT " + "".join(f"$t{i}$ " for i in range(20_000)),
                    "SELECT " + "' " * 100_001, "SELECT " + "--x\n" * 100_000):
        why_not_a_read(crafted)
    assert time.monotonic() - started < 5, "an unclosed comment or quote is read once, not once per opening"


def test_a_sqlite_warehouse_refuses_a_write_and_a_missing_file_is_not_created(tmp_path: Path) -> None:
    path = tmp_path / "shop.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (x)")
        conn.execute("INSERT INTO t VALUES (1)")
    with sql_connection(f"sqlite:///{path}") as conn:
        assert conn.exec_driver_sql("SELECT count(*) FROM t").scalar() == 1
        with pytest.raises(sqlalchemy.exc.OperationalError, match="attempt to write a readonly database"):
            conn.exec_driver_sql("INSERT INTO t VALUES (2)")
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT count(*) FROM t").fetchone() == (1,)
    with pytest.raises(sqlalchemy.exc.OperationalError, match="unable to open database file"):
        with sql_connection(f"sqlite:///{tmp_path / 'typo.db'}"):
            pass
    assert not (tmp_path / "typo.db").exists(), "reading creates no database"


def test_a_duckdb_warehouse_refuses_every_statement_that_writes(duck: tuple[str, Callable[[], int]]) -> None:
    url, rows = duck
    for write in ("DELETE FROM t", "SELECT 1; DROP TABLE t",
                  "WITH gone AS (DELETE FROM t RETURNING *) SELECT * FROM gone"):
        with sql_connection(url) as conn, pytest.raises(sqlalchemy.exc.DBAPIError, match="read-only mode"):
            conn.exec_driver_sql(write)
    assert rows() == len(ROWS)


@pytest.mark.parametrize(
    "kind, endless",
    [("sqlite", "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT count(*) FROM r"),
     ("duckdb", "SELECT count(*) FROM range(100000000000) a, range(10) b")],
)
def test_an_in_process_statement_past_the_read_timeout_is_stopped(tmp_path: Path, kind: str, endless: str) -> None:
    path = tmp_path / f"w.{kind}"
    (sqlite3.connect if kind == "sqlite" else duckdb.connect)(str(path)).close()
    started = time.monotonic()
    with pytest.raises(ReadTimedOut, match=r"^ran past the read timeout of 0\.2 s and was stopped$"):
        with sql_connection(f"{kind}:///{path}", timeout_s=0.2) as conn:
            pd.read_sql_query(sqlalchemy.text(endless), conn)
    assert time.monotonic() - started < 5
