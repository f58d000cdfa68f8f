"""Row counts now, from the team's own databases, for tables no DataHub profile covers.

The gate compares them with the counts the last training run logged. Which
database holds a table is configuration (``lifecycle.row_counts`` in
``recall.yaml``): a glob over the dataset's full identity, ``platform:name``
as DataHub names it, maps to any SQLAlchemy URL or to an environment variable
holding one; after those, the team's dbt profile (``warehouse:``,
:mod:`recall_dagster.warehouse`) reaches the tables of its own database. A
connection whose variable is not set gives way to the next that matches. A
table with no connection, or one that cannot be reached, is left out with the
reason, never guessed. Each count runs on a connection that can only read, and
is stopped at the read timeout (:mod:`recall_dagster.read_only_sql`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Callable, Iterator, Mapping, Sequence, cast

from datahub.utilities.urns.dataset_urn import DatasetUrn

from recall_dagster.errors import reason
from recall_dagster.config.warehouse import NO_WAREHOUSE, Warehouse
from recall_dagster.read_only_sql import sql_connection
from recall_dagster.warehouse import warehouse_connection

ENV_PREFIX = "env:"


@dataclass(frozen=True)
class RowCounts:
    counts: dict[str, int] = field(default_factory=dict)  # table key -> rows now
    skipped: dict[str, str] = field(default_factory=dict)  # table key -> why it was not counted


# table key ("schema.table", as training logged it) -> the dataset URNs that may hold it
RowCounter = Callable[[Mapping[str, Sequence[str]]], RowCounts]


def identity(urn: str) -> str | None:
    """``platform:name`` of a dataset URN, the key ``lifecycle.row_counts`` globs match."""
    try:
        parsed = DatasetUrn.from_string(urn)
    except Exception:  # a URN some tool wrote oddly is simply not countable
        return None
    return f"{parsed.platform.split(':')[-1]}:{parsed.name}"


def resolve_url(value: str, environ: Mapping[str, str]) -> tuple[str | None, str]:
    """The URL a connection entry names, or None with the reason."""
    if not value.startswith(ENV_PREFIX):
        return value, ""
    variable = value[len(ENV_PREFIX) :]
    url = environ.get(variable, "").strip()
    return (url, "") if url else (None, f"{variable} is not set")


def _count(url: str, name: str, timeout_s: float) -> int:
    import sqlalchemy

    parts = name.split(".")
    schema, table = (parts[-2] if len(parts) > 1 else None), parts[-1]
    with sql_connection(url, timeout_s) as conn:
        query = sqlalchemy.select(sqlalchemy.func.count()).select_from(sqlalchemy.table(table, schema=schema))
        return int(conn.execute(query).scalar_one())


def sql_row_counter(
    connections: Sequence[tuple[str, str]], environ: Mapping[str, str] | None = None,
    warehouse: Warehouse | None = None,
) -> RowCounter:
    """A counter over the configured connections, then the warehouse's dbt profile: the first entry whose glob
    matches a dataset's identity (without case, as warehouses fold names) and whose URL is set counts it."""
    env = os.environ if environ is None else environ
    timeout_s = (warehouse or NO_WAREHOUSE).read_timeout_seconds
    profile: list[tuple[tuple[str, ...], str | None, str]] = []  # read once, on the first table that needs it

    def entries() -> Iterator[tuple[str, str | None, str]]:
        for glob, value in connections:
            url, why = resolve_url(value, env)
            yield glob, url, why
        if warehouse is not None:
            if not profile:
                profile.append(warehouse_connection(warehouse, env))
            globs, url, why = profile[0]
            yield from ((glob, url, why) for glob in globs)

    def counter(tables: Mapping[str, Sequence[str]]) -> RowCounts:
        result = RowCounts()
        for key, urns in sorted(tables.items()):
            reasons: list[str] = []
            for urn in urns:
                ident = identity(urn)
                matching = [(url, why) for glob, url, why in entries()
                            if ident and fnmatchcase(ident.lower(), glob.lower())]
                if not matching:
                    reasons.append(f"no connection in lifecycle.row_counts or the dbt profile matches {ident or urn}")
                    continue
                url = next((u for u, _ in matching if u), None)
                if url is None:
                    reasons.extend(f"{ident}: {why}" for _, why in matching)
                    continue
                try:
                    table = cast(str, ident).partition(":")[2]  # a connection matched it, so it is named
                    result.counts[key] = _count(url, table, timeout_s)
                    break
                except Exception as err:  # any driver's failure is a reason to skip, not a crash
                    reasons.append(f"{ident}: {reason(err)}")
            else:
                result.skipped[key] = "; ".join(dict.fromkeys(reasons)) or "no dataset in the graph holds it"
        return result

    return counter
