"""Column-precise blast radius: from failing tests to the exact features and models they poison.

A failing column is re-rooted to the origin columns it derives from, then
closed downstream over column lineage: a NULL price in a mart is a NULL price
at its source, and so possibly in every column computed from that source.
What is downstream splits in two: *confirmed* (derived from the failing column
itself) and *suspect* (sharing only an origin with it: a sibling computed from
the same source).  Confirmed features scale the severity; a model reached only
through suspects is at most ``SUSPECT_CAP``; a passing test on a suspect's own
column (or any column between it and the origin) clears it.  A feature
is poisoned when the column it reads (its source-column property, carried from
the feature registry) is; a feature that names no column is matched by name,
and says so, because a name is weaker evidence than lineage.  A table-level
test (no column) poisons its own table's columns without re-rooting: it names
no column to follow upstream.  Where column lineage stops short (an aggregate,
``count(*)``: an input column with no recorded lineage on a table that descends
from the failing one), the model is reached by table lineage only: a suspect
reach (``table_reach``), capped like the other suspects, that every command
reports the same way rather than some calling it hit and others clean.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Mapping, Sequence

from recall_dagster.estate import ModelClosure, display_name
from recall_dagster.estate.columns import Col, ColumnGraph, column_name, lineage_to
from recall_dagster.lifecycle.config import LifecycleConfig, SeverityConfig
from recall_dagster.lifecycle.records import AssertionRecord

Evidence = Literal["column", "name"]
SUSPECT_CAP = "MEDIUM"  # the loudest a model reached only through suspect columns can be


@dataclass(frozen=True)
class PoisonedFeature:
    urn: str
    name: str
    column: Col
    evidence: Evidence  # "column": lineage to the registry's column; "name": the feature is named like it
    lineage: tuple[Col, ...]  # origin column first, the feature's column last

    def to_json(self) -> dict[str, Any]:
        return {
            "urn": self.urn,
            "name": self.name,
            "column": column_name(self.column),
            "evidence": self.evidence,
            "lineage": [column_name(c) for c in self.lineage],
        }


@dataclass(frozen=True)
class ModelImpact:
    """What one model version loses to the failure."""

    model: str  # mlModel URN
    name: str
    version: str | None
    group: str  # registered model (mlModelGroup) URN, the version's own URN when it has none
    poisoned: tuple[PoisonedFeature, ...]  # confirmed: derived from the failing column itself
    total_features: int
    poisoned_inputs: tuple[str, ...]  # "table.column" of every poisoned column its training read or serves
    live_deployments: tuple[str, ...]
    production: bool
    failed_rows: int | None  # rows failing on the tests that watch its path (every test when none does)
    observed_by: tuple[str, ...]  # assertions whose own failing column reaches its features
    share: float  # poisoned features over all its features; without features, poisoned over read training columns
    severity: str
    training_columns: int = 0  # columns its training runs read, the measure when it records no feature
    suspect: tuple[PoisonedFeature, ...] = ()  # sharing only an origin with the failing column, not cleared by a test
    table_reach: tuple[Col, ...] = ()  # input columns with no column lineage, on a table descending from the failure

    @property
    def summary(self) -> str:
        if self.table_reach:
            return (f"reached by table lineage only: {len(self.table_reach)} input column(s) with no column lineage "
                    f"(suspect)")
        suspect = f", {len(self.suspect)} suspect" if self.suspect else ""
        if self.total_features:
            return f"{len(self.poisoned)} of {self.total_features} features poisoned{suspect}"
        read = len(self.poisoned_inputs)
        return f"{read} of {self.training_columns} training columns poisoned (it records no features)"

    def to_json(self) -> dict[str, Any]:
        return {
            "urn": self.model,
            "name": self.name,
            "version": self.version,
            "group": self.group,
            "severity": self.severity,
            "poisoned_features": len(self.poisoned),
            "total_features": self.total_features,
            "summary": self.summary,
            "training_columns": self.training_columns,
            "features": [f.to_json() for f in self.poisoned],
            "suspect_features": [f.to_json() for f in self.suspect],
            "poisoned_inputs": list(self.poisoned_inputs),
            "live_deployments": list(self.live_deployments),
            "production": self.production,
            "failed_rows": self.failed_rows,
            "observed_by": list(self.observed_by),
            "table_reach": [column_name(c) for c in self.table_reach],
        }


@dataclass(frozen=True)
class BlastRadius:
    origins: tuple[Col, ...]
    poisoned_columns: tuple[Col, ...]  # every column downstream of the origins, origins included
    models: tuple[ModelImpact, ...]  # most severe first
    severity: str | None  # the loudest model's; None when no model is hit

    def impact_on(self, model_urn: str) -> ModelImpact | None:
        return next((m for m in self.models if m.model == model_urn), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "severity": self.severity,
            "origins": [column_name(c) for c in self.origins],
            "poisoned_columns": [column_name(c) for c in self.poisoned_columns],
            "models": [m.to_json() for m in self.models],
        }


def failing_columns(record: AssertionRecord, graph: ColumnGraph, config: LifecycleConfig) -> tuple[Col, ...]:
    """The column the test names, or every column of its table for a table-level test."""
    table = graph.canonical.get(record.dataset, record.dataset)
    if record.column:
        return ((table, record.column),)
    return tuple((table, c) for c in graph.columns.get(table, ())) if config.table_level else ()


def origins_of(record: AssertionRecord, graph: ColumnGraph, config: LifecycleConfig) -> tuple[Col, ...]:
    cols = failing_columns(record, graph, config)
    if not record.column:
        return cols
    return tuple(sorted({o for c in cols for o in graph.origins(c)}))


def severity_of(share: float, live: bool, config: SeverityConfig) -> str:
    """The band the poisoned share reaches, stepped down for a version serving no live traffic."""
    names = config.names
    level = next(i for i, (_, minimum) in enumerate(config.bands) if share >= minimum)
    if not live:
        level = min(len(names) - 1, level + config.not_live_step_down)
    return names[level]


def poisoned_features(
    closure: ModelClosure, parents: Mapping[Col, Col | None], graph: ColumnGraph, config: LifecycleConfig
) -> list[PoisonedFeature]:
    hits: list[PoisonedFeature] = []
    for feature in closure.features:
        sources = [graph.canonical.get(s, s) for s in feature.sources]
        if feature.column:
            found = [((s, feature.column), "column") for s in sources if (s, feature.column) in parents]
        elif config.name_matching:
            wanted = feature.name.casefold()
            found = [(c, "name") for c in parents if c[0] in sources and c[1].casefold() == wanted]
        else:
            found = []
        if found:
            col, evidence = found[0]
            lineage = lineage_to(col, parents)
            hits.append(PoisonedFeature(feature.urn, feature.name, col, evidence, lineage))  # type: ignore[arg-type]
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
    for col in sorted(input_columns(closure, graph)):
        if graph.upstream.get(col) or col[1] not in graph.columns.get(col[0], ()):
            continue  # its lineage is recorded (the column walk judges it), or no table records the column
        twins = [u for u in closure.datasets if graph.canonical.get(u, u) == col[0]]
        above = {graph.canonical.get(u, u) for u in closure.upstream_of(twins)} - {col[0]}
        if above & failing_tables:
            found.append(col)
    return tuple(found)


def _cleared(hit: PoisonedFeature, passing: frozenset[Col]) -> bool:
    """A passing test on the suspect's own column, or on any column between it and the origin."""
    return any(col in passing for col in hit.lineage[1:])


def _impact(
    closure: ModelClosure,
    reach: tuple[Mapping[Col, Col | None], Mapping[Col, Col | None]],
    observed: Mapping[str, frozenset[Col]],
    failed_rows: Mapping[str, int | None],
    passing: frozenset[Col],
    graph: ColumnGraph,
    config: LifecycleConfig,
    failing_tables: frozenset[str] = frozenset(),
) -> ModelImpact | None:
    confirmed_parents, parents = reach
    hits = poisoned_features(closure, parents, graph, config)  # lineage from the origin, for every hit
    poisoned = [f for f in hits if f.column in confirmed_parents]
    suspect = [f for f in hits if f.column not in confirmed_parents and not _cleared(f, passing)]
    training_columns = read_columns(closure, graph)
    read = sorted(c for c in training_columns if c in confirmed_parents)
    if not closure.features:  # judged by what training read: a read column on the sibling path is suspect
        read_suspect = sorted(c for c in training_columns if c in parents and c not in confirmed_parents
                              and c not in passing)
    else:
        read_suspect = []
    by_table: tuple[Col, ...] = ()
    if not poisoned and not read and not suspect and not read_suspect:
        by_table = table_reach(closure, graph, failing_tables)
        if not by_table:
            return None
    cols = {f.column for f in (*poisoned, *suspect)} | set(read) | set(read_suspect) | set(by_table)
    watching = tuple(a for a, columns in observed.items() if cols & columns)
    weighed = watching or tuple(failed_rows)  # no test on its own path: the failure as a whole
    counts = [n for a in weighed if (n := failed_rows[a]) is not None]
    live = closure.live_deployments
    # a model that records no features (the mlflow source writes none) is judged through what its training read
    total = len(closure.features) or len(training_columns)
    confirmed_share = (len(poisoned) if closure.features else len(read)) / total
    suspect_share = ((len(suspect) if closure.features else len(read_suspect)) + len(by_table)) / total
    if confirmed_share:
        share, severity = confirmed_share, severity_of(confirmed_share, bool(live), config.severity)
    else:  # reached only through suspects: never louder than the cap
        names = config.severity.names
        found = names.index(severity_of(suspect_share, bool(live), config.severity))
        cap = names.index(SUSPECT_CAP) if SUSPECT_CAP in names else 0
        share, severity = suspect_share, names[max(found, cap)]
    return ModelImpact(
        model=closure.urn,
        name=closure.model.name,
        version=closure.model.version,
        group=closure.registered_model,
        poisoned=tuple(poisoned),
        total_features=len(closure.features),
        poisoned_inputs=tuple(column_name(c) for c in sorted(cols)),
        live_deployments=tuple(d.urn for d in live),
        production=closure.production,
        failed_rows=max(counts) if counts else None,
        observed_by=watching,
        share=share,
        severity=severity,
        training_columns=len(training_columns),
        suspect=tuple(suspect),
        table_reach=by_table,
    )


def blast_radius(
    records: Sequence[AssertionRecord],
    closures: Sequence[ModelClosure],
    graph: ColumnGraph,
    config: LifecycleConfig,
    passing: frozenset[Col] = frozenset(),
) -> BlastRadius:
    """Re-root every failing column, close downstream, and weigh what each model version loses.

    ``passing`` holds the columns whose own tests pass now: a suspect on one of them is cleared.
    """
    origins = tuple(sorted({o for r in records for o in origins_of(r, graph, config)}))
    parents = graph.reach(origins)
    confirmed = graph.reach({c for r in records for c in failing_columns(r, graph, config)})
    observed = {r.urn: frozenset(graph.reach(failing_columns(r, graph, config))) for r in records}
    failed_rows = {r.urn: r.failed_rows(config.failing) for r in records}
    tables = frozenset(graph.canonical.get(r.dataset, r.dataset) for r in records)
    impacts = [
        i for c in closures
        if (i := _impact(c, (confirmed, parents), observed, failed_rows, passing, graph, config, tables))
    ]
    rank = config.severity.rank
    impacts.sort(key=lambda i: (rank(i.severity), -i.share, -len(i.live_deployments), i.name, i.model))
    return BlastRadius(
        origins=origins,
        poisoned_columns=tuple(sorted(parents)),
        models=tuple(impacts),
        severity=impacts[0].severity if impacts else None,
    )


def describe(cause: Mapping[str, Any]) -> list[str]:
    """One line per model version a root cause's JSON reaches (incidents keep only that, postmortems and the
    blind window share it), versions that serve nothing, are not in production and are no rollback target
    folded into one line: after a few retrains they are most of the list and none of the risk."""
    rollbacks = {(m.get("rollback") or {}).get("name") for m in cause.get("models", ())}
    lines, retired = [], []
    for m in cause.get("blast_radius", {}).get("models", ()):
        if not m["live_deployments"] and not m.get("production") and m["name"] not in rollbacks:
            retired.append(m)
            continue
        serving = ", ".join(display_name(d) for d in m["live_deployments"]) or "no live deployment"
        rows = ""
        if m.get("failed_rows") is not None:
            where = "" if m["observed_by"] else " on tests off its path"
            rows = f"; {m['failed_rows']:,} failing rows{where}"
        named = ", ".join(f["name"] + (" (by name)" if f["evidence"] == "name" else "") for f in m["features"])
        suspects = ", ".join(f["name"] for f in m.get("suspect_features", ()))
        named = ", ".join(p for p in (named, suspects and f"suspect: {suspects}") if p) or ", ".join(m["poisoned_inputs"])
        lines.append(f"{m['name']} [{m['severity']}]: {m['summary']} ({named}); {serving}{rows}")
    if retired:
        names = ", ".join(m["name"] for m in retired)
        lines.append(f"{len(retired)} retired version{'s' if len(retired) > 1 else ''} (serving nothing, "
                     f"not in production, no rollback target), at most [{retired[0]['severity']}]: {names}")
    return lines
