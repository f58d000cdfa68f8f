"""Whether a failing test reaches a model version: the one rule every command applies.

A failing column is re-rooted to the origin columns it derives from, then
closed downstream over column lineage. What is downstream splits in two:
*confirmed* (derived from the failing column itself) and *suspect* (sharing
only an origin with it: a sibling computed from the same source; a passing test
on a suspect's own column, or any column between it and the origin, clears
it). A feature is reached when the column it reads is; a feature that names no
column is matched by name (``lifecycle.name_matching``). A table-level test
poisons its own table's columns (``lifecycle.table_level``). Where column
lineage stops short (an aggregate, ``count(*)``: an input column with no
recorded lineage on a table that descends from the failing one), the model is
reached by table lineage only, as a suspect. A failure on a column whose lineage
is recorded and leads to none of the model's inputs does not reach it.

The sharpest record of what a version learned from decides how strongly it is
reached: its features and their column lineage first, what its training runs
logged next. A run that logged a whole table as input says only that the table
was read; when the version's features name what it used and none of them is
derived from the failing column, the whole-table input leaves it a suspect.

The scan's ``failing_assertion`` detector, the retrain gate, the lifecycle's
blast radius (incidents, the blind window) and ``recall impact`` all ask here,
so they name the same versions for the same failure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Mapping

from recall_dagster.contracts import lifecycle as contracts
from recall_dagster.estate.closure import ModelClosure
from recall_dagster.estate.names import display_name
from recall_dagster.estate.columns import Col, ColumnGraph, column_name, lineage_to
from recall_dagster.estate.options import ReachOptions

Evidence = Literal["column", "name"]
Strength = Literal["confirmed", "table", "suspect"]


@dataclass(frozen=True)
class PoisonedFeature:
    urn: str
    name: str
    column: Col
    evidence: Evidence  # "column": lineage to the registry's column; "name": the feature is named like it
    lineage: tuple[Col, ...]  # origin column first, the feature's column last

    def contract(self) -> contracts.PoisonedFeature:
        return contracts.PoisonedFeature(
            urn=self.urn,
            name=self.name,
            column=column_name(self.column),
            evidence=self.evidence,
            lineage=[column_name(c) for c in self.lineage],
        )


def failing_columns(dataset: str, column: str | None, graph: ColumnGraph, options: ReachOptions) -> tuple[Col, ...]:
    """The column a test on ``dataset`` names, or every column of its table for a table-level test."""
    table = graph.canonical.get(dataset, dataset)
    if column:
        return ((table, column),)
    return tuple((table, c) for c in graph.columns.get(table, ())) if options.table_level else ()


def origins_of(dataset: str, column: str | None, graph: ColumnGraph, options: ReachOptions) -> tuple[Col, ...]:
    """The columns a failure is re-rooted to: the origins of the failing column (a NULL price in a mart is
    a NULL price at its source); a table-level test names no column to follow upstream."""
    cols = failing_columns(dataset, column, graph, options)
    if not column:
        return cols
    return tuple(sorted({o for c in cols for o in graph.origins(c)}))


def poisoned_features(
    closure: ModelClosure, parents: Mapping[Col, Col | None], graph: ColumnGraph, options: ReachOptions
) -> list[PoisonedFeature]:
    hits: list[PoisonedFeature] = []
    for feature in closure.features:
        sources = [graph.canonical.get(s, s) for s in feature.sources]
        found: list[tuple[Col, Evidence]]
        if feature.column:
            found = [((s, feature.column), "column") for s in sources if (s, feature.column) in parents]
        elif options.name_matching:
            wanted = feature.name.casefold()
            found = [(c, "name") for c in parents if c[0] in sources and c[1].casefold() == wanted]
        else:
            found = []
        if found:
            col, evidence = found[0]
            lineage = lineage_to(col, parents)
            hits.append(PoisonedFeature(feature.urn, feature.name, col, evidence, lineage))
    return hits


def read_columns(closure: ModelClosure, graph: ColumnGraph) -> set[Col]:
    """Columns the version's training runs recorded reading (the schema of each run input)."""
    return {
        (graph.canonical.get(urn, urn), f.path)
        for run in closure.training_runs
        for urn in run.inputs
        for f in closure.dataset(urn).fields or ()
    }


def input_columns(closure: ModelClosure, graph: ColumnGraph) -> set[Col]:
    """The columns the version reads: each feature's column on its sources, and what its training runs read."""
    features = {
        (graph.canonical.get(s, s), f.column or f.name) for f in closure.features for s in f.sources
    }
    return features | read_columns(closure, graph)


def table_reach(closure: ModelClosure, graph: ColumnGraph, failing_tables: frozenset[str]) -> tuple[Col, ...]:
    """The version's input columns that no column lineage records while their table descends, by table
    lineage, from one of ``failing_tables``: a change there may reach them through an expression lineage does
    not follow (an aggregate, ``count(*)``)."""
    found = []
    descends: dict[str, bool] = {}  # table -> whether it descends from a failing one, walked once per table
    for col in sorted(input_columns(closure, graph)):
        if graph.upstream.get(col) or col[1] not in graph.columns.get(col[0], ()):
            continue  # its lineage is recorded (the column walk judges it), or no table records the column
        table = col[0]
        if table not in descends:
            twins = [u for u in closure.datasets if graph.canonical.get(u, u) == table]
            above = {graph.canonical.get(u, u) for u in closure.upstream_of(twins)} - {table}
            descends[table] = bool(above & failing_tables)
        if descends[table]:
            found.append(col)
    return tuple(found)


def cleared(hit: PoisonedFeature, passing: frozenset[Col]) -> bool:
    """A passing test on the suspect's own column, or on any column between it and the origin."""
    return any(col in passing for col in hit.lineage[1:])


@dataclass(frozen=True)
class Reach:
    """What of one model version a failure reaches (at least one part is not empty), and how strongly."""

    poisoned: tuple[PoisonedFeature, ...]  # confirmed features
    suspect: tuple[PoisonedFeature, ...]  # features sharing only an origin, not cleared by a passing test
    read: tuple[Col, ...]  # confirmed columns its training read, judged so when it records no feature
    read_suspect: tuple[Col, ...]  # suspect columns its training read, judged so when it records no feature
    by_table: tuple[Col, ...]  # input columns reached by table lineage only
    training_columns: frozenset[Col]  # every column its training read
    whole_table: tuple[Col, ...] = ()  # confirmed columns of a table its training logged whole, none a feature's

    @property
    def strength(self) -> Strength:
        """Confirmed when a feature, or the training of a version recording none, reads a column derived from
        the failing one; table when only table lineage leads there (column lineage stops short, so what the
        version reads may well derive from the failing column: judged as loudly as confirmed); suspect when
        what it is known to read shares only an origin with the failing column, or is a whole-table input
        its features contradict: at most WARN, SUSPECT, never blocking."""
        if self.poisoned or self.read:
            return "confirmed"
        return "table" if self.by_table else "suspect"

    @property
    def why(self) -> str:
        """The evidence that decided the strength, in one clause."""
        if self.poisoned:
            f = self.poisoned[0]
            more = f" (and {len(self.poisoned) - 1} more)" if len(self.poisoned) > 1 else ""
            return f"its feature {f.name} reads {column_name(f.column)}, derived from the failing column{more}"
        if self.read:
            return f"its training read {_listed(self.read)}, derived from the failing column"
        if self.suspect:
            f = self.suspect[0]
            return (f"its feature {f.name} reads {column_name(f.column)}, which shares only its origin "
                    f"{column_name(f.lineage[0])} with the failing column")
        if self.read_suspect:
            return f"its training read {_listed(self.read_suspect)}, which shares only an origin with the failing column"
        if self.whole_table:
            tables = ", ".join(dict.fromkeys(display_name(c[0]) for c in self.whole_table))
            return (f"its training logged {tables} whole as input, but none of its features reads "
                    f"{_listed(self.whole_table)} or anything derived from it")
        return f"reached by table lineage only: {_listed(self.by_table)} has no column lineage"


def _listed(cols: tuple[Col, ...]) -> str:
    shown = ", ".join(column_name(c) for c in cols[:3])
    return shown + (f" (and {len(cols) - 3} more)" if len(cols) > 3 else "")


def reach_of(
    closure: ModelClosure,
    confirmed: Mapping[Col, Col | None],
    parents: Mapping[Col, Col | None],
    passing: frozenset[Col],
    graph: ColumnGraph,
    options: ReachOptions,
    failing_tables: frozenset[str],
) -> Reach | None:
    """What of ``closure`` the failure reaches: ``confirmed`` is downstream of the failing columns, ``parents``
    of their origins; None when nothing is reached."""
    hits = poisoned_features(closure, parents, graph, options)  # lineage from the origin, for every hit
    poisoned = tuple(f for f in hits if f.column in confirmed)
    suspect = tuple(f for f in hits if f.column not in confirmed and not cleared(f, passing))
    training_columns = read_columns(closure, graph)
    read = tuple(sorted(c for c in training_columns if c in confirmed))
    read_suspect: tuple[Col, ...] = ()
    whole_table: tuple[Col, ...] = ()
    if closure.features:  # the features name what it learned from: a whole-table input alone is weaker
        read, whole_table = (), read
    else:  # judged by what training read: a read column on the sibling path is suspect
        read_suspect = tuple(sorted(c for c in training_columns if c in parents and c not in confirmed
                                    and c not in passing))
    by_table: tuple[Col, ...] = ()
    if not poisoned and not read and not suspect and not read_suspect and not whole_table:
        by_table = table_reach(closure, graph, failing_tables)
        if not by_table:
            return None
    return Reach(poisoned, suspect, read, read_suspect, by_table, frozenset(training_columns), whole_table)


def passing_columns(closure: ModelClosure, graph: ColumnGraph, instant_ms: int) -> frozenset[Col]:
    """The columns of ``closure`` whose own tests pass at ``instant_ms``: they clear a suspect."""
    return frozenset(
        graph.col((urn, a.column)) for urn, dataset in closure.datasets.items()
        for a in (t.as_of(instant_ms) for t in dataset.assertions) if a.column and a.result == "SUCCESS"
    )


def reaches(closure: ModelClosure, graph: ColumnGraph, dataset: str, column: str | None, options: ReachOptions,
            passing: frozenset[Col]) -> Reach | None:
    """What a failing test on ``dataset`` (``column``, or the whole table) reaches of ``closure``'s model,
    over ``graph`` (the closure's column lineage, or the estate's it belongs to); None when nothing."""
    confirmed = graph.reach(failing_columns(dataset, column, graph, options))
    parents = graph.reach(origins_of(dataset, column, graph, options))
    table = frozenset({graph.canonical.get(dataset, dataset)})
    return reach_of(closure, confirmed, parents, passing, graph, options, table)
