"""Where production models are exposed: a reliability score per dataset, and the untested columns they read.

Pure over closures, their column lineage and the incident ledger.  A dataset's
score adds transparent components (tests present, freshness window met, an
active owner, documentation, few past incidents), each shown with its reason.
A column is critical when a production feature reads it, directly or through
lineage; it is a gap when no assertion on any twin of its table names it.
Gaps rank by the production models and live deployments they feed, and a gap
on a column a past incident started from or poisoned comes first: that is
where the last failure came from.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import yaml

from recall_dagster.contracts import records as contract
from recall_dagster.detect import ScanConfig
from recall_dagster.detect.freshness import judge_table
from recall_dagster.estate import Dataset, ModelClosure, display_name
from recall_dagster.estate.dbt import DbtNode
from recall_dagster.estate.columns import Col, ColumnGraph, column_name
from recall_dagster.lifecycle.incidents import IncidentEntry
from recall_dagster.protect.config import COMPONENTS, ProtectConfig



@dataclass(frozen=True)
class Component:
    name: str
    value: float  # 0..1 of its weight
    weight: float
    why: str

    def contract(self) -> contract.Component:
        """The component as a dataset's reliability shows it."""
        return contract.Component(name=self.name, value=self.value, weight=self.weight, why=self.why)


@dataclass(frozen=True)
class Reliability:
    dataset: str  # canonical URN
    score: int
    components: tuple[Component, ...]
    models: tuple[str, ...]  # production models whose closures hold it

    def contract(self) -> contract.Reliability:
        """The dataset's score as ``recall protect --json`` names it, each component beside it."""
        return contract.Reliability(
            dataset=self.dataset,
            name=display_name(self.dataset),
            score=self.score,
            models=list(self.models),
            components=[c.contract() for c in self.components],
        )


@dataclass(frozen=True)
class Gap:
    column: Col
    models: tuple[str, ...]
    live_deployments: tuple[str, ...]
    features: tuple[str, ...]  # the features it reaches
    past_incident: bool

    def contract(self) -> contract.Gap:
        """The gap as ``recall protect`` and the evidence pack's known gaps name it."""
        return contract.Gap(
            column=column_name(self.column),
            dataset=self.column[0],
            models=list(self.models),
            live_deployments=len(self.live_deployments),
            features=list(self.features),
            past_incident=self.past_incident,
        )


def _twins(closures: Sequence[ModelClosure], columns: ColumnGraph, table: str) -> list[Dataset]:
    seen: dict[str, Dataset] = {}
    for closure in closures:
        for urn, dataset in closure.datasets.items():
            if columns.canonical.get(urn, urn) == table:
                seen.setdefault(urn, dataset)
    return list(seen.values())


def _incident_tables(entries: Iterable[IncidentEntry], columns: ColumnGraph) -> dict[str, int]:
    counts: dict[str, int] = {}
    for entry in entries:
        for table in {columns.canonical.get(o[0], o[0]) for o in entry.origins}:
            counts[table] = counts.get(table, 0) + 1
    return counts


def reliability(
    closures: Sequence[ModelClosure],
    columns: ColumnGraph,
    entries: Sequence[IncidentEntry],
    config: ScanConfig,
    pc: ProtectConfig,
    now_ms: int,
) -> tuple[Reliability, ...]:
    """Every table on a production path, least reliable first."""
    tables: dict[str, set[str]] = {}
    for closure in closures:
        for urn in closure.datasets:
            tables.setdefault(columns.canonical.get(urn, urn), set()).add(closure.model.name)
    incidents = _incident_tables(entries, columns)
    out = []
    for table, models in tables.items():
        twins = _twins(closures, columns, table)
        tested = any(d.assertions for d in twins)
        fresh = judge_table(twins, now_ms, config.freshness)
        age, window = fresh.age_hours, fresh.window_hours
        owned = any(d.has_active_owner for d in twins)
        documented = any(d.description or d.terms for d in twins)
        past = incidents.get(table, 0)
        values = {
            "tests": (1.0 if tested else 0.0, "an assertion watches it" if tested else "no test or assertion on it"),
            "freshness": (
                (0.0, "nobody records when it changes") if age is None
                else (1.0, f"changed {age:.0f} h ago, within {window:g} h") if age <= window
                else (0.0, f"changed {age:.0f} h ago, past its {window:g} h window")
            ),
            "owner": (1.0 if owned else 0.0, "an active owner" if owned else "no active owner"),
            "documentation": (
                1.0 if documented else 0.0, "described or given a term" if documented else "no description or term"
            ),
            "incidents": (
                max(0.0, 1 - past / pc.incident_memory), f"{past} past incident(s)" if past else "no past incident"
            ),
        }
        components = tuple(Component(n, values[n][0], pc.weights.of(n), values[n][1]) for n in COMPONENTS)
        score = round(sum(c.value * c.weight for c in components))
        out.append(Reliability(table, score, components, tuple(sorted(models))))
    return tuple(sorted(out, key=lambda r: (r.score, display_name(r.dataset))))


def _tested(closures: Sequence[ModelClosure], columns: ColumnGraph) -> set[Col]:
    return {
        (columns.canonical.get(urn, urn), a.column)
        for closure in closures
        for urn, dataset in closure.datasets.items()
        for a in dataset.assertions
        if a.column
    }


def _incident_columns(entries: Iterable[IncidentEntry], columns: ColumnGraph) -> set[str]:
    names = set()
    for entry in entries:
        names |= {column_name((columns.canonical.get(o[0], o[0]), o[1])) for o in entry.origins}
        names |= set(entry.snapshot.get("blast_radius", {}).get("poisoned_columns", ()))
    return names


def gaps(closures: Sequence[ModelClosure], columns: ColumnGraph, entries: Sequence[IncidentEntry]) -> tuple[Gap, ...]:
    """Untested columns production features read (through lineage), the last incident's pattern first."""
    reach: dict[Col, dict[str, set[str]]] = {}
    for closure in closures:
        for col, names in columns.feeding(closure).items():
            entry = reach.setdefault(col, {"models": set(), "live": set(), "features": set()})
            entry["models"].add(closure.registered_name)
            entry["live"] |= {d.urn for d in closure.live_deployments}
            entry["features"].update(names)
    tested, past = _tested(closures, columns), _incident_columns(entries, columns)
    found = [
        Gap(col, tuple(sorted(r["models"])), tuple(sorted(r["live"])), tuple(sorted(r["features"])),
            column_name(col) in past)
        for col, r in reach.items()
        if col not in tested
    ]
    return tuple(sorted(found, key=lambda g: (
        not g.past_incident, -len(g.models), -len(g.live_deployments), -len(g.features), column_name(g.column)
    )))


def tests_yaml(gaps_found: Sequence[Gap], nodes: Mapping[str, DbtNode], tests: Sequence[str]) -> str:
    """Paste-ready dbt properties for the gaps whose table dbt builds or declares (``nodes``: canonical
    table -> its dbt node); grouped as dbt wants them, one entry per model or source table."""
    models: dict[str, dict[str, None]] = {}
    sources: dict[str, dict[str, dict[str, None]]] = {}
    for gap in gaps_found:
        node = nodes.get(gap.column[0])
        if node is not None and node.kind == "model":
            models.setdefault(node.path[0], {})[gap.column[1]] = None
        elif node is not None and node.kind == "source":
            sources.setdefault(node.path[0], {}).setdefault(node.path[1], {})[gap.column[1]] = None
    if not models and not sources:
        return ""

    def columns(names: Mapping[str, None]) -> list[dict[str, Any]]:
        return [{"name": c, "data_tests": list(tests)} for c in sorted(names)]

    document: dict[str, Any] = {"version": 2}
    if sources:
        document["sources"] = [
            {"name": source, "tables": [{"name": t, "columns": columns(cols)} for t, cols in sorted(tables.items())]}
            for source, tables in sorted(sources.items())
        ]
    if models:
        document["models"] = [{"name": m, "columns": columns(cols)} for m, cols in sorted(models.items())]
    return yaml.safe_dump(document, sort_keys=False, default_flow_style=None)
