"""The evidence between two model versions, read from MLflow and the graph.

MLflow holds what each training run recorded (metrics, parameters, tags, the
schema of every dataset input, when it ran); the graph holds what happened to
the data in between (assertion histories, freshness, lineage from the changed
column to the model's features, blind-window verdicts).  Each difference
becomes a :class:`~recall_dagster.diagnose.facts.Clue`; what could not be
looked at is listed as unverified, never assumed clean.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from fnmatch import fnmatchcase
from typing import Any, Callable, Iterable, Mapping, Sequence, cast

from recall_dagster.detect import ScanConfig, training_serving_skew
from recall_dagster.detect.config import matches_dataset
from recall_dagster.detect.freshness import judge_table
from recall_dagster.detect.profile_drift import drifts
from recall_dagster.diagnose.config import DiagnoseConfig
from recall_dagster.diagnose.facts import Clue, Facts, Relevance, RunFacts
from recall_dagster.errors import ConfigError, ModelNotFound
from recall_dagster.estate import ModelClosure, display_name
from recall_dagster.estate.dbt import dbt_nodes
from recall_dagster.estate.production import production_alias
from recall_dagster.graph.port import MetadataGraph
from recall_dagster.impact.config import ImpactConfig
from recall_dagster.impact.models import ModelSource
from recall_dagster.mlflow_registry import failing, unreachable, version_numbers
from recall_dagster.impact.measured import Measurer, assertion_replay
from recall_dagster.estate.reach import poisoned_features
from recall_dagster.estate.columns import ColumnGraph
from recall_dagster.lifecycle.config import LifecycleConfig
from recall_dagster.lifecycle.retrain_gate import training_data
from recall_dagster.lifecycle.records import AssertionRecord
from recall_dagster.lifecycle.service import Assessment, assess
from recall_dagster.lifecycle.verdict import Status
from recall_dagster.lifecycle.window import PASSING
from recall_dagster.scan import judged


class NoBaseline(ConfigError):
    """The candidate is the first version: there is nothing to compare it with."""


@dataclass(frozen=True)
class Configs:
    """The sections of recall.yaml diagnosis reads."""

    scan: ScanConfig
    lifecycle: LifecycleConfig
    diagnose: DiagnoseConfig
    impact: ImpactConfig


@dataclass(frozen=True)
class Pair:
    """The two versions compared: registry version strings, the candidate's first."""

    model: str
    candidate: str
    baseline: str


def pick_versions(
    client: Any, model: str, candidate: str | None, baseline: str | None, aliases: Sequence[str]
) -> Pair:
    """Default candidate: the newest version; default baseline: the one a production alias names, or the
    newest before the candidate when the alias already names the candidate."""
    from mlflow.exceptions import MlflowException

    try:
        versions = sorted(version_numbers(client, model))
        named = client.get_registered_model(model).aliases if versions else {}
    except (MlflowException, OSError) as err:
        if failing(err):
            raise unreachable(client.tracking_uri, f"listing the versions of {model}", err) from None
        # failing() holds for every OSError: what is left is MLflow's answer
        raise ModelNotFound(f"MLflow has no registered model {model!r}: {cast(MlflowException, err).message}") from None
    if not versions:
        raise ModelNotFound(f"MLflow has no version of {model!r}")
    for label, given in (("candidate", candidate), ("baseline", baseline)):
        if given is not None and (not given.isdigit() or int(given) not in versions):
            raise ModelNotFound(f"{model} has no version {given!r} ({label}); versions: {', '.join(map(str, versions))}")
    cand = int(candidate) if candidate else versions[-1]
    if baseline:
        return Pair(model, str(cand), baseline)
    marked = production_alias(named, frozenset(aliases))
    production = int(marked) if marked is not None else None
    if production is not None and production != cand:
        return Pair(model, str(cand), str(production))
    older = [v for v in versions if v < cand]
    if not older:
        raise NoBaseline(f"{model} version {cand} has no earlier version to compare with; give --baseline")
    return Pair(model, str(cand), str(older[-1]))


def _schemas(run: Any) -> dict[str, dict[str, str]]:
    """Input table -> column -> type, from the schema MLflow stored with each dataset input."""
    out: dict[str, dict[str, str]] = {}
    for item in getattr(run.inputs, "dataset_inputs", None) or ():
        try:
            spec = json.loads(item.dataset.schema or "{}").get("mlflow_colspec") or []
        except (TypeError, ValueError):
            continue
        out[item.dataset.name] = {str(c.get("name")): str(c.get("type")) for c in spec if isinstance(c, dict)}
    return out


def run_facts(client: Any, model: str, version: str) -> RunFacts:
    """What MLflow recorded for one version's training run (its features come later, from the graph)."""
    from mlflow.exceptions import MlflowException

    try:
        run_id = client.get_model_version(model, version).run_id
        run = client.get_run(run_id) if run_id else None
    except (MlflowException, OSError) as err:
        if failing(err):
            raise unreachable(client.tracking_uri, f"reading the training run of {model} version {version}", err) from None
        raise ModelNotFound(f"{model} version {version}: {cast(MlflowException, err).message}") from None  # as above
    if run is None:
        return RunFacts(version=version, run_id=None, start_ms=None, end_ms=None)
    metrics = {k: float(v) for k, v in run.data.metrics.items() if not math.isnan(float(v))}
    return RunFacts(
        version=version,
        run_id=run_id,
        start_ms=run.info.start_time,
        end_ms=run.info.end_time,
        metrics=metrics,
        params=dict(run.data.params),
        tags=dict(run.data.tags),
        schemas=_schemas(run),
    )


def _differences(before: Mapping[str, str], after: Mapping[str, str]) -> list[tuple[str, str | None, str | None]]:
    return [(k, before.get(k), after.get(k)) for k in sorted(set(before) | set(after)) if before.get(k) != after.get(k)]


def _code_tags(run: RunFacts, config: DiagnoseConfig) -> dict[str, str]:
    """The run's tags that name a revision of its training code (``diagnose.code_tags``)."""
    return {k: v for k, v in run.tags.items() if any(fnmatchcase(k, g) for g in config.code_tags)}


def _code_clues(base: RunFacts, cand: RunFacts, config: DiagnoseConfig) -> list[Clue]:
    prefix = config.transform_tag_prefix
    transforms = {
        tag[len(prefix):]: (base.tags.get(tag), cand.tags.get(tag))
        for tag in {*base.tags, *cand.tags} if prefix and tag.startswith(prefix)
    }
    clues = []
    for feature, (before, after) in sorted(transforms.items()):
        if before == after:
            continue
        code = (after or "").partition("@")[0]
        module, _, function = code.partition(":")
        clues.append(Clue(
            "transform_changed", feature,
            f"the code computing {feature} changed: {before or 'none'} -> {after or 'none'}",
            "feature", fields=(feature,), data={"module": module, "function": function, "before": before, "after": after},
        ))
    for tag, before, after in _differences(_code_tags(base, config), _code_tags(cand, config)):
        clues.append(Clue("code_changed", tag, f"training code {tag}: {before or 'none'} -> {after or 'none'}",
                          "input", fields=cand.features))
    return clues


def _param_clues(base: RunFacts, cand: RunFacts) -> list[Clue]:
    clues = [
        Clue("param_changed", name, f"parameter {name}: {before} -> {after}", "input")
        for name, before, after in _differences(base.params, cand.params) if name != "features"
    ]
    added, removed = sorted(set(cand.features) - set(base.features)), sorted(set(base.features) - set(cand.features))
    if added or removed:
        clues.append(Clue("features_changed", "features", f"features added {added or 'none'}, removed {removed or 'none'}",
                          "feature", fields=tuple(added + removed)))
    return clues


def _schema_clues(
    base: RunFacts, cand: RunFacts, readers: Callable[[str, str], tuple[str, ...]]
) -> list[Clue]:
    """Columns the two runs' dataset inputs recorded differently; ``readers(table, column)`` names the features
    a column reaches (tables as the runs name them)."""
    clues = []
    for table in sorted(set(base.schemas) & set(cand.schemas)):
        for column, before, after in _differences(base.schemas[table], cand.schemas[table]):
            change = "added" if before is None else "removed" if after is None else f"retyped {before} -> {after}"
            fields = readers(table, column)
            clues.append(Clue("schema_changed", f"{table}.{column}", f"{table}.{column} {change} between the runs",
                              "feature" if fields else "input", fields=fields))
    return clues


def _feature_readers(
    closure: ModelClosure, columns: ColumnGraph, at: Iterable[tuple[str, str]], lc: LifecycleConfig
) -> tuple[str, ...]:
    """Features of ``closure`` a change to the columns ``at`` reaches, as the blast radius matches them."""
    reached = columns.reach([columns.col(c) for c in at])
    return tuple(f.name for f in poisoned_features(closure, reached, columns, lc.reach))


def _relevance(closure: ModelClosure, columns: ColumnGraph, dataset: str, fields: tuple[str, ...]) -> Relevance:
    if fields:
        return "feature"
    table = columns.canonical.get(dataset, dataset)
    if table in {columns.canonical.get(u, u) for u in closure.direct_inputs}:
        return "input"
    return "upstream"


def _assertion_clues(
    records: Sequence[AssertionRecord], closure: ModelClosure, columns: ColumnGraph, base: RunFacts,
    cand: RunFacts, config: ScanConfig, lc: LifecycleConfig,
) -> list[Clue]:
    start = base.end_ms or base.start_ms
    if start is None or cand.start_ms is None:
        return []
    reach = {columns.canonical.get(u, u) for u in training_data(closure)}
    clues = []
    for record in records:
        if columns.canonical.get(record.dataset, record.dataset) not in reach:
            continue
        inside = sorted(
            (r for r in record.runs if r.at_ms is not None and start <= r.at_ms <= cand.start_ms),
            key=lambda r: r.at_ms or 0,
        )
        failed = [r for r in inside if lc.failing(r.result)]
        if not failed:
            continue
        at = [(record.dataset, record.column)] if record.column else [
            (record.dataset, c) for c in columns.columns.get(columns.canonical.get(record.dataset, record.dataset), ())
        ]
        fields = _feature_readers(closure, columns, at, lc)
        labels = any(matches_dataset(g, closure.dataset(record.dataset)) for g in config.label_tables)
        kind = "label_shift" if labels else "assertion_failed"
        rows = f" ({failed[0].failed_rows:,} failing rows)" if failed[0].failed_rows is not None else ""
        passed = [r.at_ms for r in record.runs if r.at_ms is not None and r.at_ms < (failed[0].at_ms or 0)
                  and r.result == PASSING]
        data = {"assertion": record.name, "dataset": record.dataset, "column": record.column, "kind": record.kind,
                "failed_rows": failed[0].failed_rows, "classification": lc.classify(record.kind or record.name),
                "clean_until_ms": max(passed) if passed else None}
        clues.append(Clue(kind, record.where, f"{record.name} on {record.where} failed{rows}", _relevance(
            closure, columns, record.dataset, fields), at_ms=failed[0].at_ms, fields=fields, data=data))
        if not lc.failing(inside[-1].result):
            clues.append(Clue(kind, record.where, f"{record.name} passed again before the candidate trained",
                              _relevance(closure, columns, record.dataset, fields), at_ms=inside[-1].at_ms,
                              fields=fields, against=True, data=data))
    return clues


def _upstream_guards(graph: MetadataGraph, clues: list[Clue], columns: ColumnGraph) -> list[Clue]:
    """Each failing column test with the dbt node it runs on and the columns one step upstream in tables dbt
    builds or declares: where the same test would have failed before the table the model reads was rebuilt."""
    def guarded(clue: Clue) -> bool:
        data = clue.data
        return clue.kind == "assertion_failed" and not clue.against and bool(data.get("column") and data.get("kind"))

    failing = {i: columns.col((str(c.data["dataset"]), str(c.data["column"]))) for i, c in enumerate(clues) if guarded(c)}
    parents = {key: sorted(columns.upstream.get(col, ())) for key, col in failing.items()}
    tables = {col[0] for col in failing.values()} | {p[0] for found in parents.values() for p in found}
    nodes = dbt_nodes(graph, columns, tables) if tables else {}
    out = []
    for i, clue in enumerate(clues):
        col = failing.get(i)
        if col is None or col[0] not in nodes:
            out.append(clue)
            continue
        guards = [{"node": nodes[p[0]].unique_id, "column": p[1]} for p in parents[i] if p[0] in nodes]
        out.append(replace(clue, data={**clue.data, "dbt_node": nodes[col[0]].unique_id, "guard_upstream": guards}))
    return out


def _state_clues(assessment: Assessment, closure: ModelClosure, cand: RunFacts, config: ScanConfig) -> list[Clue]:
    clues = []
    for cause in assessment.causes:
        verdict, impact = cause.versions_of(closure.urn), cause.blast.impact_on(closure.urn)
        if verdict is not None and verdict.verdict.status is Status.CONTAMINATED:
            poisoned = tuple(f.name for f in impact.poisoned) if impact else ()
            group = next((m for m in cause.models if verdict in m.versions), None)
            target = group.rollback.version if group and group.rollback else None
            clues.append(Clue("contaminated", closure.model.name, verdict.verdict.reason,
                              "feature" if poisoned else "input", fields=poisoned,
                              data={"rollback": target, "rollback_note": group.rollback_note if group else None}))
    if cand.start_ms is not None:
        for urn in closure.direct_inputs:
            name, table = closure.dataset(urn).name, judge_table(closure.same_table(urn), cand.start_ms, config.freshness)
            if table.stale and table.last is not None:
                clues.append(Clue("input_stale", name,
                                  f"{name} had not changed for over {table.window_hours:g} h when the candidate trained",
                                  "input", at_ms=table.last.updated_ms))
    skew = judged([closure], config, {}, at_ms=assessment.at_ms).findings.get(closure.urn, ())
    for finding in skew:
        if finding.detector == training_serving_skew.NAME:
            clues.append(Clue("serving_skew", display_name(finding.subject), finding.message, "feature"))
    return clues


def _profile_clues(closure: ModelClosure, base: RunFacts, cand: RunFacts, config: ScanConfig) -> list[Clue]:
    """Profiled columns the features read that moved between the two trainings, one clue per table it starts in."""
    if base.start_ms is None or cand.start_ms is None:
        return []
    found = drifts(closure, config.profile_drift, cand.start_ms, base.start_ms, "the profile when the baseline trained")
    return [
        Clue("profile_shifted", display_name(d.urn), d.message, "feature" if d.features else "input",
             at_ms=d.profiled_at_ms, fields=d.features, data={"dataset": d.urn, "columns": list(d.shifts)})
        for d in found
    ]


def _row_clues(base: RunFacts, cand: RunFacts, lc: LifecycleConfig) -> list[Clue]:
    prefix, limit = lc.training_rows_metric, lc.gate.max_row_drop
    clues = []
    for name in sorted(k for k in cand.metrics if k.startswith(prefix) and k in base.metrics):
        before, after = base.metrics[name], cand.metrics[name]
        if before and abs(after - before) / before > limit:
            clues.append(Clue("rows_changed", name[len(prefix):],
                              f"{name[len(prefix):]}: {before:,.0f} rows at the baseline, {after:,.0f} at the candidate",
                              "input"))
    return clues


def replayed_loss(clue: Clue, baseline: ModelClosure, measurer: Measurer) -> float | None:
    """The loss the baseline model shows when the failing test's bad rows are replayed on it, when they can be:
    the same replay measured severity makes of the test's finding."""
    data = clue.data
    replays, _ = assertion_replay(data.get("assertion"), str(data.get("dataset")), data.get("column"),
                                  data.get("failed_rows"), measurer.columns, measurer.lc, measurer.ic.measured,
                                  measurer.rows)
    report = measurer.run(baseline, replays[0]) if replays else None
    losses = [r.measurement.loss for r in report.results if r.measurement and r.measurement.loss is not None] if report else []
    return max(losses) if losses else None


def collect(
    graph: MetadataGraph, pair: Pair, runs: tuple[RunFacts, RunFacts], configs: Configs, source: ModelSource,
    now_ms: int,
) -> Facts:
    """Both runs (``runs``: baseline, candidate, as MLflow recorded them) and every clue between them, with what
    could not be looked at; the features each version serves come from its closure in the graph."""
    config, lc, dc, ic = configs.scan, configs.lifecycle, configs.diagnose, configs.impact
    assessment = assess(graph, config, lc, now_ms)
    by_name = {(c.registered_name, c.model.version): c for c in assessment.estate.closures}
    base_closure, cand_closure = by_name.get((pair.model, pair.baseline)), by_name.get((pair.model, pair.candidate))
    unverified = []
    if cand_closure is None:
        unverified.append(f"the graph does not hold {pair.model} version {pair.candidate} yet: its lineage, "
                          "features and serving path are read from the baseline's")
    closure = cand_closure or base_closure
    features = tuple(f.name for f in closure.features) if closure else ()
    base = replace(runs[0], features=tuple(f.name for f in base_closure.features) if base_closure else features)
    cand = replace(runs[1], features=features)
    clues = [*_code_clues(base, cand, dc), *_param_clues(base, cand), *_row_clues(base, cand, lc)]
    if not (_code_tags(base, dc) and _code_tags(cand, dc)):
        unverified.append(f"the two runs do not both record a code revision ({', '.join(dc.code_tags)}); "
                          "only per-feature transform tags were compared")
    unverified.append("DataHub's dbt source keeps no history of model checksums: a dbt model changed between the "
                      "runs is seen only through the tests and schemas it changed")
    if closure is None:
        unverified.append(f"the graph holds neither version of {pair.model}: no lineage, tests or freshness were read")
        return Facts(pair.model, cand, base, tuple(clues), len(features), tuple(unverified))
    columns = assessment.estate.columns
    def readers(table: str, column: str) -> tuple[str, ...]:
        return _feature_readers(closure, columns, [(u, column) for u in closure.datasets if display_name(u) == table], lc)

    clues += _schema_clues(base, cand, readers)
    clues += _upstream_guards(graph, _assertion_clues(assessment.records, closure, columns, base, cand, config, lc),
                              columns)
    clues += _state_clues(assessment, closure, cand, config)
    clues += _profile_clues(closure, base, cand, config)
    if base_closure is not None:
        rows = {k[len(lc.training_rows_metric):]: int(v) for k, v in cand.metrics.items()
                if k.startswith(lc.training_rows_metric)}
        measurer = Measurer(columns, lc, ic, source, rows)
        clues = [
            replace(c, measured_loss=replayed_loss(c, base_closure, measurer))
            if c.kind == "assertion_failed" and not c.against else c
            for c in clues
        ]
    return Facts(pair.model, cand, base, tuple(clues), len(features), tuple(unverified))
