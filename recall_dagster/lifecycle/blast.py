"""Column-precise blast radius: from failing tests to the exact features and models they poison, weighed.

Whether a failure reaches a model version is decided by :mod:`recall_dagster.estate.reach`, the rule
every command shares (confirmed and suspect columns, table reach where column lineage stops short).
Here what it reaches is weighed: confirmed features scale the severity by the
share of the model's features they are; a model reached only through suspects
is at most ``SUSPECT_CAP``; the failing rows of the tests watching its path say
how much went wrong.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from recall_dagster.contracts import lifecycle as contracts
from recall_dagster.estate import ModelClosure, display_name
from recall_dagster.estate.columns import Col, ColumnGraph, column_name
from recall_dagster.estate.reach import PoisonedFeature, Strength, failing_columns, origins_of, reach_of
from recall_dagster.lifecycle.config import LifecycleConfig, SeverityConfig
from recall_dagster.estate.measures import weight_text
from recall_dagster.lifecycle.records import AssertionRecord, AssertionRun
from recall_dagster.severity import Severity

SUSPECT_CAP = "MEDIUM"  # the loudest a model reached only through suspect columns can be


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
    measured: tuple[str, ...]  # what those tests measured when not failing rows ("row_count 1,520, ...")
    observed_by: tuple[str, ...]  # assertions whose own failing column reaches its features
    share: float  # poisoned features over all its features; without features, poisoned over read training columns
    severity: str  # the incident band (lifecycle.severity.bands)
    level: Severity  # where that band stands on the one ladder findings and thresholds use
    training_columns: int = 0  # columns its training runs read, the measure when it records no feature
    suspect: tuple[PoisonedFeature, ...] = ()  # sharing only an origin with the failing column, not cleared by a test
    table_reach: tuple[Col, ...] = ()  # input columns with no column lineage, on a table descending from the failure
    reach: Strength = "confirmed"  # how strongly the failure reaches it (estate.reach's one rule)
    reach_reason: str = ""  # the evidence that decided it

    @property
    def suspect_reason(self) -> str | None:
        """Why the failure reaches it only as a suspect; None when reached for sure."""
        return self.reach_reason if self.reach == "suspect" else None

    @property
    def summary(self) -> str:
        if self.table_reach:
            return (f"reached by table lineage only: {len(self.table_reach)} input column(s) with no column lineage "
                    f"(suspect)")
        suspect = f", {len(self.suspect)} suspect" if self.suspect else ""
        if self.total_features and self.reach == "suspect" and not self.suspect:
            suspect = f" (suspect: {self.reach_reason})"
        if self.total_features:
            return f"{len(self.poisoned)} of {self.total_features} features poisoned{suspect}"
        read = len(self.poisoned_inputs)
        return f"{read} of {self.training_columns} training columns poisoned (it records no features)"

    def contract(self) -> contracts.ModelImpact:
        return contracts.ModelImpact(
            urn=self.model,
            name=self.name,
            version=self.version,
            group=self.group,
            severity=self.severity,
            level=self.level,
            poisoned_features=len(self.poisoned),
            total_features=self.total_features,
            summary=self.summary,
            training_columns=self.training_columns,
            features=[f.contract() for f in self.poisoned],
            suspect_features=[f.contract() for f in self.suspect],
            poisoned_inputs=list(self.poisoned_inputs),
            live_deployments=list(self.live_deployments),
            production=self.production,
            failed_rows=self.failed_rows,
            measured=list(self.measured),
            observed_by=list(self.observed_by),
            table_reach=[column_name(c) for c in self.table_reach],
            reach=self.reach,
            reach_reason=self.reach_reason,
        )


@dataclass(frozen=True)
class BlastRadius:
    origins: tuple[Col, ...]
    poisoned_columns: tuple[Col, ...]  # every column downstream of the origins, origins included
    models: tuple[ModelImpact, ...]  # most severe first
    severity: str | None  # the loudest model's; None when no model is hit

    def impact_on(self, model_urn: str) -> ModelImpact | None:
        return next((m for m in self.models if m.model == model_urn), None)

    def contract(self) -> contracts.BlastRadius:
        return contracts.BlastRadius(
            severity=self.severity,
            origins=[column_name(c) for c in self.origins],
            poisoned_columns=[column_name(c) for c in self.poisoned_columns],
            models=[m.contract() for m in self.models],
        )


def severity_of(share: float, live: bool, config: SeverityConfig) -> str:
    """The band the poisoned share reaches, stepped down for a version serving no live traffic."""
    names = config.names
    level = next(i for i, (_, minimum) in enumerate(config.ranked) if share >= minimum)
    if not live:
        level = min(len(names) - 1, level + config.not_live_step_down)
    return names[level]


def _impact(
    closure: ModelClosure,
    reach: tuple[Mapping[Col, Col | None], Mapping[Col, Col | None]],
    observed: Mapping[str, frozenset[Col]],
    failures: Mapping[str, AssertionRun | None],
    passing: frozenset[Col],
    graph: ColumnGraph,
    config: LifecycleConfig,
    failing_tables: frozenset[str] = frozenset(),
) -> ModelImpact | None:
    confirmed_parents, parents = reach
    found = reach_of(closure, confirmed_parents, parents, passing, graph, config.reach, failing_tables)
    if found is None:
        return None
    poisoned, suspect, read, read_suspect, by_table, whole_table = (
        found.poisoned, found.suspect, found.read, found.read_suspect, found.by_table, found.whole_table)
    training_columns = found.training_columns
    cols = {f.column for f in (*poisoned, *suspect)} | {*read, *read_suspect, *by_table, *whole_table}
    watching = tuple(a for a, columns in observed.items() if cols & columns)
    weighed = [run for a in watching or tuple(failures) if (run := failures[a])]  # none on its path: all of them
    counts = [run.failed_rows for run in weighed if run.failed_rows is not None]
    live = closure.live_deployments
    # a model that records no features (the mlflow source writes none) is judged through what its training read
    total = len(closure.features) or len(training_columns)
    if found.strength == "confirmed":  # poisoned features, or read columns of a version recording none
        share = (len(poisoned) + len(read)) / total
        severity = severity_of(share, bool(live), config.severity)
    else:  # reached only through suspects: never louder than the cap
        share = min(1.0, (len(suspect) + len(read_suspect) + len(whole_table) + len(by_table)) / total)
        names = config.severity.names
        band = names.index(severity_of(share, bool(live), config.severity))
        cap = names.index(SUSPECT_CAP) if SUSPECT_CAP in names else 0
        severity = names[max(band, cap)]
    return ModelImpact(
        model=closure.urn,
        name=closure.model.name,
        version=closure.model.version,
        group=closure.registered_model,
        poisoned=poisoned,
        total_features=len(closure.features),
        poisoned_inputs=tuple(column_name(c) for c in sorted(cols)),
        live_deployments=tuple(d.urn for d in live),
        production=closure.production,
        failed_rows=max(counts) if counts else None,
        measured=tuple(dict.fromkeys(run.measured for run in weighed if run.measured)),
        observed_by=watching,
        share=share,
        severity=severity,
        level=config.severity.scale.on_ladder(severity),
        training_columns=len(training_columns),
        suspect=suspect,
        table_reach=by_table,
        reach=found.strength,
        reach_reason=found.why,
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
    origins = tuple(sorted({o for r in records for o in origins_of(r.dataset, r.column, graph, config.reach)}))
    parents = graph.reach(origins)
    confirmed = graph.reach({c for r in records for c in failing_columns(r.dataset, r.column, graph, config.reach)})
    observed = {r.urn: frozenset(graph.reach(failing_columns(r.dataset, r.column, graph, config.reach)))
                for r in records}
    failures = {r.urn: r.newest_failure(config.failing) for r in records}
    tables = frozenset(graph.canonical.get(r.dataset, r.dataset) for r in records)
    impacts = [
        i for c in closures
        if (i := _impact(c, (confirmed, parents), observed, failures, passing, graph, config, tables))
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
        weight = weight_text(m.get("failed_rows"), ", ".join(m.get("measured", ())))
        rows = f"; {weight}{'' if m['observed_by'] else ' on tests off its path'}" if weight else ""
        named = ", ".join(f["name"] + (" (by name)" if f["evidence"] == "name" else "") for f in m["features"])
        suspects = ", ".join(f["name"] for f in m.get("suspect_features", ()))
        named = ", ".join(p for p in (named, suspects and f"suspect: {suspects}") if p) or ", ".join(m["poisoned_inputs"])
        lines.append(f"{m['name']} [{m['severity']}]: {m['summary']} ({named}); {serving}{rows}")
    if retired:
        names = ", ".join(m["name"] for m in retired)
        lines.append(f"{len(retired)} retired version{'s' if len(retired) > 1 else ''} (serving nothing, "
                     f"not in production, no rollback target), at most [{retired[0]['severity']}]: {names}")
    return lines
