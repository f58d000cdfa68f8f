"""``recall protect``: read the production closures, the incident ledger and the dbt identities, then assess."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from datahub.metadata.schema_classes import DatasetPropertiesClass

from recall_dagster.detect import RecallConfig
from recall_dagster.graph.port import MetadataGraph
from recall_dagster.lifecycle.columns import ColumnGraph, column_graph
from recall_dagster.lifecycle.ledger import Ledger
from recall_dagster.protect.assess import Gap, Reliability, gaps, reliability, tests_yaml
from recall_dagster.protect.config import ProtectConfig
from recall_dagster.scan import iso_instant, select_closures
from recall_dagster.settings import Settings

SCHEMA_VERSION = 1
DBT_ID = "dbt_unique_id"  # the custom property DataHub's dbt source gives every node


@dataclass(frozen=True)
class ProtectReport:
    assessed_at_ms: int
    datasets: tuple[Reliability, ...]
    gaps: tuple[Gap, ...]
    dbt_tests: str  # paste-ready YAML for the top gaps dbt builds or declares
    top: int

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "assessed_at": iso_instant(self.assessed_at_ms),
            "datasets": [r.to_json() for r in self.datasets],
            "gaps": [g.to_json() for g in self.gaps],
            "top": self.top,
            "dbt_tests": self.dbt_tests,
        }


def _dbt_identities(graph: MetadataGraph, columns: ColumnGraph, tables: Iterable[str]) -> dict[str, str]:
    """Canonical table -> the ``dbt_unique_id`` its dbt twin carries, for the tables dbt builds or declares."""
    wanted = set(tables)
    twins = {u: c for u, c in columns.canonical.items() if c in wanted and ":dbt," in u}
    aspects = graph.get_aspects(sorted(twins), [DatasetPropertiesClass]) if twins else {}
    found: dict[str, str] = {}
    for urn, table in twins.items():
        props = aspects.get(urn, {}).get(DatasetPropertiesClass.ASPECT_NAME)
        unique = (props.customProperties or {}).get(DBT_ID) if isinstance(props, DatasetPropertiesClass) else None
        if unique:
            found.setdefault(table, unique)
    return found


def protect_report(
    graph: MetadataGraph, settings: Settings, config: RecallConfig, pc: ProtectConfig, now_ms: int
) -> ProtectReport:
    closures = select_closures(graph, config, scanned_at_ms=now_ms)
    columns = column_graph(closures)
    entries = list(Ledger(settings.state_dir, graph.location).load().values())
    found = gaps(closures, columns, entries)
    shown = found[: pc.top]
    identities = _dbt_identities(graph, columns, {g.column[0] for g in shown})
    return ProtectReport(
        now_ms, reliability(closures, columns, entries, config, pc, now_ms), found,
        tests_yaml(shown, identities, pc.suggested_tests), pc.top,
    )
