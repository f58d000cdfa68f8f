"""Read every model's closure from the graph, a round of batched reads per hop (see ``graph.port``).

Closures come from aspect reads (the primary store, immediately consistent),
never from lineage search, which lags writes and cannot see the serving path
(``Contains``) or legacy training inputs.  All selected models are resolved
together so a warehouse shared by ten models is read once, not ten times.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterable, Mapping, NamedTuple, Sequence, cast

from datahub.metadata.schema_classes import (
    AssertionInfoClass,
    AssertionRunEventClass,
    DataFlowInfoClass,
    DataJobInfoClass,
    DataProcessInstanceRunEventClass,
    DatasetProfileClass,
    OperationClass,
    StatusClass,
    UpstreamLineageClass,
)

from recall_dagster.estate import parse
from recall_dagster.estate.production import is_production, served_where_recorded
from recall_dagster.estate.closure import ModelClosure, assemble_closure
from recall_dagster.estate.lookup import named_inputs
from recall_dagster.estate.names import MLFLOW_DATASET, display_name
from recall_dagster.estate.marks import recall_assertion
from recall_dagster.estate.shards import Shard
from recall_dagster.estate.options import ResolveOptions
from recall_dagster.estate.views import Assertion, Deployment, Model
from recall_dagster.graph.port import AspectMap, MetadataGraph, aspect_of


# The links the resolver reads from their far side: a dataset's assertions, a feature's tables, the runs that
# write a dataset (a dbt model's builds: legacy ``outputs`` and ``outputEdges``).
ASSERTS, CONTAINS = "Asserts", "Contains"
PRODUCES = ("Produces", "DataProcessInstanceProduces")
INCOMING = (ASSERTS, CONTAINS, *PRODUCES)
RUN_FIELDS = ("status", "result.type", "timestampMillis")
DPI, DATA_JOB = "urn:li:dataProcessInstance:", "urn:li:dataJob:"


def _sorted(urns: Iterable[str]) -> list[str]:
    return sorted(set(urns))


def _people(graph: MetadataGraph, *aspect_maps: AspectMap) -> dict[str, bool]:
    urns = _sorted(p for amap in aspect_maps for aspects in amap.values() for p in parse.referenced_people(aspects))
    found = graph.get_aspects(urns, parse.PERSON_ASPECTS) if urns else {}
    return {u: parse.person_active(found.get(u, {})) for u in urns}


def _read_models(
    graph: MetadataGraph, options: ResolveOptions, model_urns: list[str]
) -> tuple[dict[str, Model], dict[str, Deployment]]:
    raw = graph.get_aspects(model_urns)
    group_urns = _sorted(g for aspects in raw.values() for g in parse.group_refs(aspects))
    groups = graph.get_aspects(group_urns) if group_urns else {}
    people = _people(graph, raw, groups)
    models = {
        urn: parse.parse_model(
            urn,
            raw.get(urn, {}),
            groups=groups,
            people=people,
            production_aliases=options.production_aliases,
            production_tags=options.production_tags,
        )
        for urn in model_urns
    }
    deployment_urns = _sorted(d for m in models.values() for d in m.deployments)
    raw_deployments = graph.get_aspects(deployment_urns) if deployment_urns else {}
    deployments = {
        u: parse.parse_deployment(u, raw_deployments.get(u, {}), options.live_statuses) for u in deployment_urns
    }
    return served_where_recorded(models, deployments), deployments


def _read_datasets(graph: MetadataGraph, seeds: Iterable[str], max_depth: int) -> AspectMap:
    """Datasets within ``max_depth`` hops above the seeds, a batched read per hop, cycle safe."""
    read: AspectMap = {}
    frontier = _sorted(seeds)
    for depth in range(max_depth + 1):
        if not frontier:
            break
        batch = graph.get_aspects(frontier)
        read.update({u: batch.get(u, {}) for u in frontier})
        if depth == max_depth:
            break
        upstream: set[str] = set()
        for urn in frontier:
            lineage = cast("UpstreamLineageClass | None", read[urn].get(UpstreamLineageClass.ASPECT_NAME))
            upstream.update(u.dataset for u in (lineage.upstreams if lineage else ()))
        frontier = _sorted(upstream - read.keys())
    return read


def assertion_runs(graph: MetadataGraph, urns: Sequence[str], limit: int) -> dict[str, list[parse.Run]]:
    """Each assertion's newest ``limit`` runs, newest first, read as far as Recall reads a run (:class:`parse.Run`)."""
    read = graph.timeseries_values(urns, AssertionRunEventClass, parse.RUN_FIELDS, limit=limit)
    return {urn: [parse.Run(*values) for values in found] for urn, found in read.items()}


def _read_assertions(
    graph: MetadataGraph, dataset_urns: Sequence[str], history_limit: int
) -> dict[str, tuple[Assertion, ...]]:
    """Each dataset's assertions (found by the incoming ``Asserts`` edge) with their latest result."""
    asserted = graph.related(dataset_urns, ASSERTS, "incoming") if dataset_urns else {}
    assertion_urns = _sorted(a for found in asserted.values() for a in found)
    infos = graph.get_aspects(assertion_urns, [AssertionInfoClass, StatusClass]) if assertion_urns else {}
    kept = [a for a in assertion_urns if not parse.is_removed(infos.get(a, {})) and not recall_assertion(infos.get(a, {}))]
    runs = assertion_runs(graph, kept, history_limit)
    parsed = {
        a: parse.parse_assertion(a, aspect_of(infos.get(a, {}), AssertionInfoClass), runs[a])
        for a in kept
    }
    return {d: tuple(parsed[a] for a in sorted(set(asserted.get(d, ()))) if a in parsed) for d in dataset_urns}


def _producers(graph: MetadataGraph, dataset_urns: Sequence[str]) -> dict[str, set[str]]:
    """Whatever records writing each dataset: process instances (runs) and the jobs they run."""
    producers: dict[str, set[str]] = {}
    for relationship in PRODUCES:
        for dataset, found in graph.related(dataset_urns, relationship, "incoming").items():
            producers.setdefault(dataset, set()).update(found)
    return producers


def _builds(graph: MetadataGraph, producers: Mapping[str, set[str]]) -> dict[str, tuple[int, ...]]:
    """When each dataset was last written by a run that succeeded, newest first: DataHub's dbt source records a
    model's builds (``run_results.json``) as process instances producing it, which is how a stock dbt estate
    says when its tables changed; orchestrator plugins (Dagster's, Airflow's) record their steps' runs alike."""
    runs = _sorted(r for found in producers.values() for r in found if r.startswith(DPI))
    if not runs:
        return {}
    last = graph.timeseries_values(runs, DataProcessInstanceRunEventClass, RUN_FIELDS, limit=1)
    done = {r: ms for r, found in last.items() for status, result, ms in found[:1]
            if status == "COMPLETE" and result == "SUCCESS" and ms}
    return {d: tuple(sorted((done[r] for r in found if r in done), reverse=True)) for d, found in producers.items()}


class _Writers(NamedTuple):
    names: tuple[str, ...]  # as a person finds them in the orchestrator: 'dagster: dbt_build/dbt_warehouse'
    urns: tuple[str, ...]  # the jobs and their flows read for those names: a change to one is a change to the table


_NO_WRITERS = _Writers((), ())


def _writers(graph: MetadataGraph, producers: Mapping[str, set[str]]) -> dict[str, _Writers]:
    """The orchestrator jobs recorded as writing each dataset (a Dagster op, through DataHub's Dagster
    plugin), named as a person finds them in the orchestrator: which job to rerun when the table is stale."""
    jobs = _sorted(j for found in producers.values() for j in found if j.startswith(DATA_JOB))
    if not jobs:
        return {}
    read = graph.get_aspects(jobs, [DataJobInfoClass])
    flows = {j: parse.flow_of(j) for j in jobs}
    flow_read = graph.get_aspects(_sorted(set(flows.values())), [DataFlowInfoClass])
    named = {j: parse.writer_name(j, read[j], flow_read[flows[j]]) for j in jobs}
    return {d: _Writers(tuple(sorted(named[j] for j in mine)), tuple(sorted({*mine, *(flows[j] for j in mine)})))
            for d, found in producers.items() if (mine := [j for j in found if j in named])}


def _dangling_references(raw: AspectMap, inputs: Sequence[str]) -> dict[str, str]:
    """Training inputs that are MLflow dataset references with no lineage to what they name: URN -> name."""
    dangling = {}
    for urn in inputs:
        lineage = aspect_of(raw.get(urn, {}), UpstreamLineageClass)
        if urn.startswith(MLFLOW_DATASET) and not (lineage and lineage.upstreams):
            dangling[urn] = display_name(urn)
    return dangling


def _operations(ops: Sequence[OperationClass]) -> tuple[tuple[int, int], ...]:
    """(reported, last updated) per operation, newest report first."""
    pairs = {(op.timestampMillis, op.lastUpdatedTimestamp) for op in ops if op.lastUpdatedTimestamp}
    return tuple(sorted(pairs, reverse=True))


@dataclass(frozen=True)
class Resolution:
    """The closures of the selected models, and every model read to choose them (what chose them is what
    an incremental rescan must watch for the models left out)."""

    closures: list[ModelClosure]
    models: dict[str, Model]


def resolve_closures(
    graph: MetadataGraph,
    options: ResolveOptions,
    *,
    include_all: bool = False,
    model_urns: Sequence[str] | None = None,
) -> list[ModelClosure]:
    """Closures of the production models (every model with ``include_all``, or exactly ``model_urns``).

    Soft-deleted models are skipped unless named.  Closures come back sorted
    by model URN so everything built on them is deterministic.
    """
    return resolve(graph, options, include_all=include_all, model_urns=model_urns).closures


def resolve(
    graph: MetadataGraph,
    options: ResolveOptions,
    *,
    include_all: bool = False,
    model_urns: Sequence[str] | None = None,
    candidates: Sequence[str] | None = None,
    shard: Shard | None = None,
) -> Resolution:
    """:func:`resolve_closures`, choosing among ``candidates`` (listed models) instead of every model listed,
    as an incremental rescan does for the models a change reaches, and only the models ``shard`` holds."""
    listed = list(candidates) if candidates is not None else graph.list_urns("mlModel")
    models, deployments = _read_models(graph, options, _sorted([*listed, *(model_urns or ())]))
    if model_urns is not None:
        selected = [models[u] for u in _sorted(model_urns)]
    else:
        selected = [
            m for m in models.values() if not m.removed and (include_all or is_production(m, deployments))
            and (shard is None or shard.holds(m))
        ]
        selected.sort(key=lambda m: m.urn)

    feature_urns = _sorted(f for m in selected for f in m.features)
    raw_features = graph.get_aspects(feature_urns) if feature_urns else {}
    tables_of = graph.related(feature_urns, CONTAINS, "incoming") if feature_urns else {}
    features = {
        u: parse.parse_feature(u, raw_features.get(u, {}), tables_of.get(u, ()), options.feature_column_properties)
        for u in feature_urns
    }
    table_urns = _sorted(t for f in features.values() for t in f.tables)
    raw_tables = graph.get_aspects(table_urns) if table_urns else {}
    tables = {u: parse.parse_feature_table(u, raw_tables.get(u, {})) for u in table_urns}

    run_urns = _sorted(r for m in selected for r in m.training_runs)
    raw_runs = graph.get_aspects(run_urns) if run_urns else {}
    runs = {u: parse.parse_training_run(u, raw_runs.get(u, {})) for u in run_urns}

    seeds = [s for f in features.values() for s in f.sources] + [i for r in runs.values() for i in r.inputs]
    raw_datasets = _read_datasets(graph, seeds, options.max_depth)
    named = named_inputs(graph, _dangling_references(raw_datasets, [i for r in runs.values() for i in r.inputs]))
    if named:
        raw_datasets = {**_read_datasets(graph, named.values(), options.max_depth), **raw_datasets}
    # every dataset, catalogued or not: dbt hangs source-freshness tests on warehouse tables it never describes
    assertions = _read_assertions(graph, sorted(raw_datasets), options.history_limit)
    people = _people(graph, raw_datasets)
    term_urns = _sorted(t for aspects in raw_datasets.values() for t in parse.referenced_terms(aspects))
    raw_terms = graph.get_aspects(term_urns, parse.TERM_ASPECTS) if term_urns else {}
    glossary = {u: name for u in term_urns if (name := parse.term_name(raw_terms.get(u, {})))}
    operations = graph.timeseries(sorted(raw_datasets), OperationClass, limit=options.history_limit)
    producers = _producers(graph, sorted(raw_datasets))
    builds, writers = _builds(graph, producers), _writers(graph, producers)
    profiles = graph.timeseries(sorted(raw_datasets), DatasetProfileClass, limit=options.history_limit)
    datasets = {
        u: parse.parse_dataset(
            u,
            aspects,
            people=people,
            glossary=glossary,
            freshness_property=options.freshness_property,
            # a table known only by its operations (written by a job, never catalogued) still exists
            operations_ms=_operations(operations[u]),
            builds_ms=builds.get(u, ()),
            written_by=writers.get(u, _NO_WRITERS).names,
            writer_urns=writers.get(u, _NO_WRITERS).urns,
            assertions=assertions.get(u, ()),
            profiles=parse.parse_profiles(profiles[u]),
        )
        for u, aspects in raw_datasets.items()
    }
    for reference, table in named.items():  # the run read that table: its reference is a copy of it
        datasets[reference] = replace(datasets[reference], upstreams=(table,), copy_of=table)

    production_versions: dict[str, list[str]] = {}
    for m in sorted(models.values(), key=lambda m: m.urn):
        if m.registry_production and not m.removed:
            for g in m.groups:
                production_versions.setdefault(g, []).append(m.urn)
    closures = [
        assemble_closure(
            m,
            production=is_production(m, deployments),
            features=features,
            feature_tables=tables,
            training_runs=runs,
            deployments=deployments,
            datasets=datasets,
            production_versions=tuple(dict.fromkeys(v for g in m.groups for v in production_versions.get(g, ()))),
            max_depth=options.max_depth,
        )
        for m in selected
    ]
    return Resolution(closures, models)
