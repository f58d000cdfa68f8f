"""``recall protect``: read the production closures, the incident ledger and the dbt identities, then assess."""

from __future__ import annotations

from dataclasses import dataclass

from recall_dagster.contracts import records as contract
from recall_dagster.contracts.base import VERSION
from recall_dagster.detect import ScanConfig
from recall_dagster.graph.port import MetadataGraph
from recall_dagster.estate.dbt import dbt_nodes
from recall_dagster.estate.columns import column_graph
from recall_dagster.lifecycle.ledger import Ledger
from recall_dagster.protect.assess import Gap, Reliability, gaps, reliability, tests_yaml
from recall_dagster.protect.config import ProtectConfig
from recall_dagster.instants import iso_instant
from recall_dagster.scan import select_closures
from recall_dagster.settings import Settings



@dataclass(frozen=True)
class ProtectReport:
    assessed_at_ms: int
    datasets: tuple[Reliability, ...]
    gaps: tuple[Gap, ...]
    dbt_tests: str  # paste-ready YAML for the top gaps dbt builds or declares
    top: int

    def contract(self) -> contract.Protect:
        """The report as ``recall protect --json`` names it."""
        return contract.Protect(
            schema_version=VERSION,
            assessed_at=iso_instant(self.assessed_at_ms),
            datasets=[r.contract() for r in self.datasets],
            gaps=[g.contract() for g in self.gaps],
            top=self.top,
            dbt_tests=self.dbt_tests,
        )


def protect_report(
    graph: MetadataGraph, settings: Settings, config: ScanConfig, pc: ProtectConfig, now_ms: int
) -> ProtectReport:
    closures = select_closures(graph, config)
    columns = column_graph(closures)
    entries = list(Ledger(settings.state_dir, graph.location).load().values())
    found = gaps(closures, columns, entries)
    shown = found[: pc.top]
    nodes = dbt_nodes(graph, columns, {g.column[0] for g in shown})
    return ProtectReport(
        now_ms, reliability(closures, columns, entries, config, pc, now_ms), found,
        tests_yaml(shown, nodes, pc.suggested_tests), pc.top,
    )
