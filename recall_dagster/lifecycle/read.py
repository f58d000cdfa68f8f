"""Thin readers over the graph port: the estate, assertion histories, training runs, incidents.

Everything the pure core needs that a closure does not carry is read here in
batches (one request per aspect kind, one timeseries read per assertion or
run) and handed over as plain values, so the core never sees the graph.
"""

from __future__ import annotations

import math
from typing import Callable, Mapping, Sequence

from datahub.metadata.schema_classes import (
    AssertionInfoClass,
    DataProcessInstancePropertiesClass,
    DataProcessInstanceRunEventClass,
    DataProcessRunStatusClass,
    DatasetProfileClass,
    IncidentInfoClass,
    IncidentStateClass,
    MLTrainingRunPropertiesClass,
    ViewPropertiesClass,
)

from recall_dagster.detect import ScanConfig
from recall_dagster.estate import Dataset, ModelClosure, display_name
from recall_dagster.estate.measures import measured
from recall_dagster.estate.parse import Run, assertion_kind, parse_assertion
from recall_dagster.estate.resolve import assertion_runs, resolve_closures
from recall_dagster.estate.unlinked import failing_outside
from recall_dagster.graph.port import MetadataGraph
from recall_dagster.estate.columns import column_graph
from recall_dagster.lifecycle.incidents import INCIDENT_TYPE
from recall_dagster.lifecycle.records import AssertionRecord, AssertionRun, Estate, OpenIncident, TrainingSpan

def read_estate(graph: MetadataGraph, config: ScanConfig) -> Estate:
    """All model versions, not only production ones: a rollback target is rarely in production."""
    closures = tuple(resolve_closures(graph, config.resolve, include_all=True))
    datasets = {u: d for c in closures for u, d in c.datasets.items()}
    return Estate(closures=closures, columns=column_graph(closures), datasets=datasets)


def _materialised(estate: Estate, aspects: Mapping[str, Mapping[str, object]], dataset: str) -> bool:
    """Whether the table stores its rows (changes only when written): a twin's view properties say so, and a
    table no source describes as a view (a raw table a loader writes, a warehouse table) stores them too."""
    views = [v for twin in estate.twins(dataset)
             if isinstance(v := aspects.get(twin, {}).get(ViewPropertiesClass.ASPECT_NAME), ViewPropertiesClass)]
    return not views or any(v.materialized for v in views)


def _descriptions(estate: Estate, dataset: str) -> list[Dataset]:
    return [estate.datasets[t] for t in estate.twins(dataset) if t in estate.datasets]


def _writes(estate: Estate, dataset: str) -> tuple[int, ...]:
    """When the table's data was written, by the records that list each write: operations, and the builds that
    wrote it (a dbt model's, from run_results.json), on any description of it."""
    twins = _descriptions(estate, dataset)
    return tuple(sorted({
        *(updated for twin in twins for _, updated in twin.operations_ms),
        *(built for twin in twins for built in twin.builds_ms),
    }))


def _last_change(estate: Estate, dataset: str) -> int | None:
    """The newest change a stamp records (the platform's lastModified, dbt source freshness's max_loaded_at)."""
    stamps = [twin.last_modified_ms for twin in _descriptions(estate, dataset) if twin.last_modified_ms is not None]
    return max(stamps, default=None)


HISTORY_CEILING = 10_000  # runs read per assertion at the most, however long a failing streak is


def run_histories(
    graph: MetadataGraph, urns: Sequence[str], limit: int, failing: Callable[[str | None], bool]
) -> dict[str, list[Run]]:
    """Each assertion's runs newest first, back to the last passing one before its current failing streak.

    ``limit`` runs of every assertion are read in one batch; those whose runs all
    fail while the graph may hold more are read again, four times as many, so a
    streak longer than ``closure.history_limit`` still has its start (and the
    versions trained before it stay CLEAN).
    """
    histories: dict[str, list[Run]] = {}
    todo = list(urns)
    while todo:
        read = assertion_runs(graph, todo, limit)
        histories.update(read)
        todo = [
            urn for urn in read
            if len(histories[urn]) == limit and limit < HISTORY_CEILING
            and all(failing(run.result) for run in histories[urn])
        ]
        limit = min(limit * 4, HISTORY_CEILING)
    return histories


def read_assertions(
    graph: MetadataGraph, estate: Estate, history_limit: int, failing: Callable[[str | None], bool]
) -> tuple[AssertionRecord, ...]:
    """Every assertion on a dataset some model depends on, with its run history back past any failing streak."""
    found: dict[str, tuple[str, str | None, str, tuple[str, ...]]] = {}
    for closure in estate.closures:
        for urn, view in closure.datasets.items():
            for a in view.assertions:
                found.setdefault(a.urn, (urn, a.column, a.name, a.aliases))
    wanted = sorted(found)
    datasets = sorted({found[a][0] for a in wanted})
    twins = sorted({t for d in datasets for t in estate.twins(d)})
    views = graph.get_aspects(twins, [ViewPropertiesClass]) if twins else {}
    infos = graph.get_aspects(wanted, [AssertionInfoClass]) if wanted else {}
    histories = run_histories(graph, wanted, history_limit, failing)
    records = []
    for urn in wanted:
        dataset, column, name, aliases = found[urn]
        aspect = infos.get(urn, {}).get(AssertionInfoClass.ASPECT_NAME)
        info = aspect if isinstance(aspect, AssertionInfoClass) else None
        runs = []
        for run in histories[urn]:
            one = parse_assertion(urn, info, [run])
            runs.append(AssertionRun(run.at_ms or None, one.result, one.failed_rows,
                                     measured(info, run.agg_value, run.native) if one.result else None))
        kind = assertion_kind(info)
        stores = _materialised(estate, views, dataset)
        records.append(
            AssertionRecord(
                urn=urn,
                name=name if name != display_name(urn) else f"{kind or 'assertion'} on {display_name(dataset)}",
                dataset=dataset,
                column=column,
                kind=kind,
                runs=tuple(runs),
                writes_ms=_writes(estate, dataset) if stores else (),
                aliases=aliases,
                last_change_ms=_last_change(estate, dataset) if stores else None,
            )
        )
    return tuple(records)


def unlinked_failures(
    graph: MetadataGraph, linked: set[str], failing: Callable[[str | None], bool], instant_ms: int, history: int,
) -> tuple[AssertionRecord, ...]:
    """Assertions failing at ``instant_ms`` on data no model's closure reaches (:func:`failing_outside`), as
    records: a team's failing dbt test Recall saw and could tie to nothing is said, never left out of a
    "0 causes" answer."""
    return tuple(
        AssertionRecord(urn=o.assertion.urn, name=o.assertion.name, dataset=o.dataset, column=o.assertion.column,
                        kind=o.kind, runs=(AssertionRun(o.assertion.ran_at_ms, o.assertion.result,
                                                        o.assertion.failed_rows),),
                        aliases=o.assertion.aliases)
        for o in failing_outside(graph, linked, failing, instant_ms, history)
    )


def training_span(
    run: str,
    aspects: Mapping[str, object],
    events: Sequence[DataProcessInstanceRunEventClass],
    rows_metric: str,
) -> TrainingSpan:
    """Start from the STARTED event, else the run's creation, else end minus duration; end from the COMPLETE event.

    ``aspects`` are the run's ``dataProcessInstanceProperties`` and
    ``mlTrainingRunProperties``; the row counts are the metrics named ``<rows_metric><schema>.<table>``
    (``lifecycle.training_rows_metric``).
    """
    props = aspects.get(DataProcessInstancePropertiesClass.ASPECT_NAME)
    training = aspects.get(MLTrainingRunPropertiesClass.ASPECT_NAME)
    started = [e.timestampMillis for e in events if e.status == DataProcessRunStatusClass.STARTED]
    completed = [e for e in events if e.status == DataProcessRunStatusClass.COMPLETE]
    start = min(started) if started else None
    if start is None and isinstance(props, DataProcessInstancePropertiesClass) and props.created and props.created.time:
        start = props.created.time
    end = max((e.timestampMillis for e in completed), default=None)
    if start is None and end is not None:
        duration = next((e.durationMillis for e in completed if e.timestampMillis == end and e.durationMillis), None)
        start = end - duration if duration else None
    rows: dict[str, int] = {}
    if isinstance(training, MLTrainingRunPropertiesClass):
        for metric in training.trainingMetrics or ():
            if rows_metric and metric.name.startswith(rows_metric) and metric.value:
                try:
                    count = float(metric.value)
                except ValueError:
                    continue
                if math.isfinite(count) and count >= 0:  # "inf", "NaN" or a negative count counts nothing
                    rows[metric.name[len(rows_metric) :]] = int(count)
    return TrainingSpan(run=run, start_ms=start, end_ms=end, table_rows=rows)


def read_training_spans(
    graph: MetadataGraph, closures: Sequence[ModelClosure], rows_metric: str
) -> dict[str, tuple[TrainingSpan, ...]]:
    """Every training run each version records, in its order; empty for a version with none.

    A version fine-tuned after its first fit, or refit on a second run, read data
    at each of those times, so each is judged against the blind window.
    """
    runs = sorted({r for c in closures for r in c.model.training_runs})
    wanted = [DataProcessInstancePropertiesClass, MLTrainingRunPropertiesClass]
    aspects = graph.get_aspects(runs, wanted) if runs else {}
    events = graph.timeseries(runs, DataProcessInstanceRunEventClass)
    spans = {r: training_span(r, aspects.get(r, {}), events[r], rows_metric) for r in runs}
    return {c.urn: tuple(spans[r] for r in c.model.training_runs) for c in closures}


def read_open_incidents(graph: MetadataGraph, datasets: Sequence[str]) -> tuple[OpenIncident, ...]:
    """ACTIVE incidents on the datasets, raised by anyone but the lifecycle (its own are derived afresh)."""
    on = graph.related(sorted(set(datasets)), "IncidentOn", "incoming") if datasets else {}
    urns = sorted({i for found in on.values() for i in found})
    infos = graph.get_aspects(urns, [IncidentInfoClass]) if urns else {}
    open_: list[OpenIncident] = []
    for urn in urns:
        info = infos.get(urn, {}).get(IncidentInfoClass.ASPECT_NAME)
        if (
            isinstance(info, IncidentInfoClass)
            and info.status.state == IncidentStateClass.ACTIVE
            and info.customType != INCIDENT_TYPE
        ):
            hit = tuple(sorted(d for d, found in on.items() if urn in found))
            open_.append(OpenIncident(urn, info.title or display_name(urn), hit))
    return tuple(open_)


def relation(urn: str) -> str:
    """``schema.table`` of a warehouse dataset, the key training logs its row counts under."""
    return ".".join(display_name(urn).split(".")[-2:])


def read_profile_rows(graph: MetadataGraph, datasets: Sequence[str]) -> dict[str, int]:
    """``schema.table`` -> the newest profiled row count, for datasets someone profiles."""
    rows: dict[str, int] = {}
    latest = graph.timeseries(sorted(set(datasets)), DatasetProfileClass, limit=1)
    for urn, newest in latest.items():
        if newest and newest[0].rowCount is not None:
            rows.setdefault(relation(urn), int(newest[0].rowCount))
    return rows
