"""The ``warehouse:`` section of ``recall.yaml``: which dbt project's profile reaches the team's tables.

A plain value, read by the row counter and the impact query (:mod:`recall_dagster.warehouse` opens
the connection it names).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from recall_dagster.errors import ConfigError


@dataclass(frozen=True)
class Warehouse:
    """The ``warehouse:`` section: which dbt project's profile reaches the team's tables."""

    dbt_project: str | None  # the dbt project folder; None: DBT_PROJECT_DIR, as dbt reads it, or no warehouse
    profiles_dir: str | None  # None: DBT_PROFILES_DIR, the project, ~/.dbt
    target: str | None  # None: DBT_TARGET, then the profile's own target


def parse_warehouse(data: Mapping[str, Any], source: str) -> Warehouse:
    """The top-level ``warehouse`` mapping; every value a folder or name, or null."""
    section = data.get("warehouse") or {}
    if not isinstance(section, Mapping):
        raise ConfigError(f"{source}: warehouse must be a mapping")
    values: dict[str, str | None] = {}
    for key in ("dbt_project", "profiles_dir", "target"):
        value = section.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise ConfigError(f"{source}: warehouse.{key} must be a non-empty string or null")
        values[key] = value.strip() if isinstance(value, str) else None
    return Warehouse(**values)
