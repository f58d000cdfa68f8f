"""Which tables dbt builds or declares, as DataHub's dbt source records them on each node.

The dbt source gives every node's dataset the custom properties
``dbt_unique_id`` (``model.<package>.<name>``, ``source.<package>.<source>.<table>``)
and ``dbt_file_path`` (the file that defines it, relative to the dbt project).
That is enough to find where a team declares a table's tests, so Recall can
suggest (and, in a copy, add) the ones that are missing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from datahub.metadata.schema_classes import DatasetPropertiesClass

from recall_dagster.graph.port import MetadataGraph
from recall_dagster.estate.columns import ColumnGraph

UNIQUE_ID = "dbt_unique_id"
FILE_PATH = "dbt_file_path"


@dataclass(frozen=True)
class DbtNode:
    """A dbt model or source table: its unique id and, when recorded, the file that defines it."""

    unique_id: str
    file_path: str | None = None

    @property
    def kind(self) -> str | None:
        """``model`` or ``source`` when the id is well formed, else None."""
        parts = self.unique_id.split(".")
        if parts[0] == "model" and len(parts) >= 3:
            return "model"
        if parts[0] == "source" and len(parts) >= 4:
            return "source"
        return None

    @property
    def path(self) -> tuple[str, ...]:
        """Where its properties sit in a dbt YAML file: ``(model,)`` or ``(source, table)``."""
        parts = self.unique_id.split(".")
        return (parts[2],) if self.kind == "model" else (parts[2], parts[3]) if self.kind == "source" else ()

    @property
    def selector(self) -> str:
        """What ``dbt --select`` names it by."""
        return f"source:{self.path[0]}.{self.path[1]}" if self.kind == "source" else self.path[0]


def dbt_nodes(graph: MetadataGraph, columns: ColumnGraph, tables: Iterable[str]) -> dict[str, DbtNode]:
    """Canonical table -> the dbt node its dbt twin records, for those of ``tables`` dbt builds or declares."""
    wanted = set(tables)
    twins = {u: c for u, c in columns.canonical.items() if c in wanted and ":dbt," in u}
    aspects = graph.get_aspects(sorted(twins), [DatasetPropertiesClass]) if twins else {}
    found: dict[str, DbtNode] = {}
    for urn, table in sorted(twins.items()):
        props = aspects.get(urn, {}).get(DatasetPropertiesClass.ASPECT_NAME)
        custom = (props.customProperties or {}) if isinstance(props, DatasetPropertiesClass) else {}
        if custom.get(UNIQUE_ID):
            found.setdefault(table, DbtNode(custom[UNIQUE_ID], custom.get(FILE_PATH)))
    return found
