"""Row counts now, straight from the warehouse, for tables no DataHub profile covers.

The gate compares them with the counts the last training run logged; this is
the one place the lifecycle asks the warehouse anything, and it only counts.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import psycopg2
from psycopg2 import sql

from recall_dagster.errors import RecallError
from recall_dagster.lifecycle.service import RowCounter
from recall_dagster.settings import Settings
from recall_dagster.stack.warehouse import Warehouse, ensure_warehouse


def count_rows(warehouse: Warehouse, tables: Sequence[str]) -> dict[str, int]:
    """``schema.table`` -> ``count(*)``; a table that cannot be counted is left out, not guessed."""
    counts: dict[str, int] = {}
    conn = warehouse.connect()
    try:
        for table in tables:
            schema, _, name = table.partition(".")
            if not schema or not name:
                continue
            try:
                with conn.cursor() as cur:
                    query = sql.SQL("SELECT count(*) FROM {}.{}").format(sql.Identifier(schema), sql.Identifier(name))
                    cur.execute(query)
                    counts[table] = int(cur.fetchone()[0])
            except psycopg2.Error:
                conn.rollback()
    finally:
        conn.close()
    return counts


def warehouse_counter(settings: Settings) -> RowCounter | None:
    """A counter over the configured warehouse, or None when there is none to ask.

    The embedded warehouse is only used when it already exists under RECALL_HOME:
    judging a retrain never creates one.
    """
    if not settings.warehouse_url and not settings.pg_data.exists():
        return None

    def counter(tables: Sequence[str]) -> Mapping[str, int]:
        try:
            return count_rows(ensure_warehouse(settings), tables)
        except RecallError:
            return {}

    return counter
