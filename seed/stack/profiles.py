"""Profiles of the warehouse's tables, computed by SQL after each dbt build, as DataHub ``datasetProfile``s.

A team would turn on its ingestion source's profiler; the demo has no
profiler dependency, so it asks Postgres directly: one pass per table for its
row count and each column's NULLs and distinct values, plus min, max, mean and
standard deviation of the numeric columns.  The profiles carry the time they
were taken, so a scan can set today's data against the data a model trained on.
"""

from __future__ import annotations

from typing import Callable, Sequence

import psycopg2
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata.schema_classes import DatasetFieldProfileClass, DatasetProfileClass, PartitionSpecClass

from recall_dagster.errors import StackError
from seed.stack.warehouse import Warehouse

PROFILED_SCHEMAS = ("raw", "marts")  # the tables; staging is views over raw
NUMERIC = {"smallint", "integer", "bigint", "numeric", "real", "double precision"}


def _columns(cur, schemas: Sequence[str]) -> dict[tuple[str, str], list[tuple[str, str]]]:
    cur.execute(
        "SELECT c.table_schema, c.table_name, c.column_name, c.data_type FROM information_schema.columns c "
        "JOIN information_schema.tables t USING (table_schema, table_name) "
        "WHERE c.table_schema = ANY(%s) AND t.table_type = 'BASE TABLE' ORDER BY 1, 2, c.ordinal_position",
        (list(schemas),),
    )
    found: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for schema, table, column, kind in cur.fetchall():
        found.setdefault((schema, table), []).append((column, kind))
    return found


def _text(value: object) -> str | None:
    return None if value is None else f"{float(value):.10g}"  # type: ignore[arg-type]


def _profile(cur, schema: str, table: str, columns: list[tuple[str, str]], at_ms: int) -> DatasetProfileClass:
    parts = ["count(*)"]
    for column, kind in columns:
        quoted = f'"{column}"'
        parts += [f"count({quoted})", f"count(DISTINCT {quoted})"]
        if kind in NUMERIC:
            parts += [f"min({quoted})", f"max({quoted})", f"avg({quoted})", f"stddev_pop({quoted})"]
    cur.execute(f'SELECT {", ".join(parts)} FROM "{schema}"."{table}"')
    values = list(cur.fetchone())
    rows = int(values.pop(0))
    fields = []
    for column, kind in columns:
        present, distinct = int(values.pop(0)), int(values.pop(0))
        numeric = [values.pop(0) for _ in range(4)] if kind in NUMERIC else [None] * 4
        fields.append(DatasetFieldProfileClass(
            fieldPath=column, uniqueCount=distinct, uniqueProportion=distinct / rows if rows else None,
            nullCount=rows - present, nullProportion=(rows - present) / rows if rows else None,
            min=_text(numeric[0]), max=_text(numeric[1]), mean=_text(numeric[2]), stdev=_text(numeric[3]),
        ))
    return DatasetProfileClass(
        timestampMillis=at_ms, rowCount=rows, columnCount=len(columns), fieldProfiles=fields,
        partitionSpec=PartitionSpecClass(partition="FULL_TABLE_SNAPSHOT", type="FULL_TABLE"),
    )


def profile_mcps(
    warehouse: Warehouse, urn_of: Callable[[str], str], at_ms: int
) -> list[MetadataChangeProposalWrapper]:
    """A profile of every table in the profiled schemas; ``urn_of("schema.table")`` is its dataset URN."""
    conn = warehouse.connect()
    try:
        with conn, conn.cursor() as cur:
            tables = _columns(cur, PROFILED_SCHEMAS)
            return [
                MetadataChangeProposalWrapper(
                    entityUrn=urn_of(f"{schema}.{table}"),
                    aspect=_profile(cur, schema, table, columns, at_ms),
                )
                for (schema, table), columns in sorted(tables.items())
            ]
    except psycopg2.Error as err:
        raise StackError(f"could not profile the warehouse at {warehouse.where}: {err}".strip()) from err
    finally:
        conn.close()
