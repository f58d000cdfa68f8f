"""The ``warehouse:`` section of ``recall.yaml``: which dbt project's profile reaches the team's tables.

A plain value, read by the row counter and the impact query (:mod:`recall_dagster.warehouse` opens
the connection it names).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Warehouse:
    """The ``warehouse:`` section: which dbt project's profile reaches the team's tables."""

    dbt_project: str | None  # the dbt project folder; None: DBT_PROJECT_DIR, as dbt reads it, or no warehouse
    profiles_dir: str | None  # None: DBT_PROFILES_DIR, the project, ~/.dbt
    target: str | None  # None: DBT_TARGET, then the profile's own target
    read_timeout_seconds: float = 300.0  # each statement read there (recall_dagster.read_only_sql)
