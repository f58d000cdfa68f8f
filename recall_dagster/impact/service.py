"""The impact test's entry point: read the graph, find who a column reaches, measure, record.

``recall impact`` and the Dagster ``impact_tests`` asset call :func:`impact_test`
and :func:`record_impact`; time comes in as ``now_ms``.  Lineage is read over
every model version (a column is named in any closure that holds it), the
measurement only on the production versions, or the ones ``models`` selects.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from recall_dagster.detect import ScanConfig
from recall_dagster.errors import ConfigError
from recall_dagster.estate import display_name
from recall_dagster.estate.lookup import NamedTable, recorded_columns, table_named
from recall_dagster.graph.port import MetadataGraph
from recall_dagster.impact.config import ImpactConfig
from recall_dagster.impact.experiment import ImpactReport, Progress, run_experiment
from recall_dagster.impact.models import ModelSource
from recall_dagster.impact.mutation_spec import Mutation, parse_mutation
from recall_dagster.impact.publish import ImpactPublished, publish_impact, write_evidence
from recall_dagster.impact.targets import affected_models, changed_column
from recall_dagster.estate.columns import column_graph
from recall_dagster.lifecycle.config import LifecycleConfig
from recall_dagster.scan import select_closures
from recall_dagster.settings import Settings
from recall_dagster.writeback.config import RetryPolicy


@dataclass(frozen=True)
class ImpactRequest:
    dataset: str  # URN or unambiguous table name
    column: str
    mutation: str  # OP[:ARG]
    fraction: float | None = None
    models: Sequence[str] = ()  # narrows the production models measured, never widens them


def impact_test(
    graph: MetadataGraph,
    config: ScanConfig,
    lc: LifecycleConfig,
    ic: ImpactConfig,
    request: ImpactRequest,
    source: ModelSource,
    now_ms: int,
    progress: Progress = lambda _: None,
) -> ImpactReport:
    mutation = parse_mutation(request.mutation, request.fraction)
    every = select_closures(graph, config, include_all=True)
    columns = column_graph(every)
    table = table_named(graph, columns, request.dataset)
    if table is None:
        raise ConfigError(f"no dataset named {request.dataset!r} in the graph")
    if not table.read:
        return _read_by_no_model(graph, table, request.column, mutation)
    changed = changed_column(columns, table.urn, request.column)
    measured = select_closures(graph, config, models=request.models)
    affected = affected_models(measured, columns, changed, lc)
    return run_experiment(affected, changed, mutation, source, ic, progress)


def _read_by_no_model(graph: MetadataGraph, table: NamedTable, column: str, mutation: Mutation) -> ImpactReport:
    """A table the catalog holds but no model's closure reaches: nothing is affected, and that is the answer."""
    known = recorded_columns(graph, table.described)
    if known and column not in known:
        raise ConfigError(f"{display_name(table.urn)} has no column {column!r} (columns: {', '.join(known)})")
    return ImpactReport(table.urn, column, mutation, ())


def record_impact(
    graph: MetadataGraph | None,
    settings: Settings,
    report: ImpactReport,
    policy: RetryPolicy,
    now_ms: int,
) -> ImpactPublished:
    """Evidence under RECALL_HOME first; then, given a graph, the documents and verdict properties."""
    settings.ensure_home()
    evidence = write_evidence(settings.evidence_dir, report, now_ms)
    if graph is None:
        return ImpactPublished(evidence=evidence)
    return publish_impact(graph, report, evidence, policy, now_ms)
