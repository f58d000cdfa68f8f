"""Measured severity: each finding on a column that reaches a production model, replayed on the model.

A detector can say a column was retyped or fails a not-null test; only the
model can say whether that matters.  Each finding at or above
``impact.measured.min_severity`` is turned into the mutation that replays it
(a retype into ``type_coercion``, a time zone change into ``timezone_shift``,
a dropped column into ``drop``, a failing not-null test into
``null_fraction`` at the share of rows that failed), run against the version
the finding is about, and carries the verdict: BLOCK raises it, PASS lowers
it, with the measurement as evidence either way.  What cannot be replayed (a
table-level test, a failed share nobody counted, a model not in MLflow) keeps
its severity and says why in ``evidence["measured"]``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from recall_dagster.config.warehouse import Warehouse
from recall_dagster.detect import Finding, Severity, failing_assertion, training_source_schema_drift, upstream_staleness
from recall_dagster.detect.catalogue import Found
from recall_dagster.graph.port import MetadataGraph
from recall_dagster.estate import Closure, ModelClosure
from recall_dagster.impact.config import ImpactConfig, MeasuredConfig
from recall_dagster.impact.mutation_spec import Mutation, parse_mutation
from recall_dagster.impact.policy import Verdict, worst
from recall_dagster.impact.targets import affected_models
from recall_dagster.estate.columns import Col, ColumnGraph, column_graph, column_name
from recall_dagster.lifecycle.config import LifecycleConfig
from recall_dagster.scan import Measure
from recall_dagster.lifecycle.read import read_profile_rows, read_training_spans, relation
from recall_dagster.settings import Settings

if TYPE_CHECKING:
    from recall_dagster.impact.experiment import ImpactReport
    from recall_dagster.impact.models import ModelSource, Subject

_TIME_WORDS = ("timestamp", "datetime", "date", "time")
# The detectors whose findings are replayed (or, for staleness, said to be unreplayable).
MEASURED = (training_source_schema_drift.NAME, failing_assertion.NAME, upstream_staleness.NAME)
STALE_REASON = "a table that stopped refreshing has no faithful replay on held-out rows; the finding keeps its severity"


@dataclass(frozen=True)
class Replay:
    changed: Col
    mutation: Mutation
    why: str  # the finding's change, in words


def _is_time(native_type: str | None) -> bool:
    return any(word in (native_type or "").casefold() for word in _TIME_WORDS)


def _drift_replays(finding: Finding, columns: ColumnGraph, mc: MeasuredConfig) -> tuple[list[Replay], str | None]:
    table = columns.canonical.get(finding.cause or "", finding.cause or "")
    reaching = set(finding.evidence.get("model_input_columns", ()))
    replays = []
    for change in finding.evidence.get("changes", ()):
        if change["column"] not in reaching or change["change"] == "added":
            continue
        kind = change["change"]
        if kind == "retyped" and _is_time(change["before"]) and _is_time(change["after"]):
            kind = "retyped_time"
        spec = mc.schema_drift.get(kind)
        if spec:
            why = f"{change['column']} {change['change']}" + (
                f" {change['before']} -> {change['after']}" if change["change"] == "retyped" else ""
            )
            replays.append(Replay((table, change["column"]), parse_mutation(spec), why))
    return replays, None if replays else "no change to a column the model reads has a mutation in impact.measured"


def assertion_replay(
    assertion: str | None,
    dataset: str,
    column: str | None,
    failed: int | None,
    columns: ColumnGraph,
    lc: LifecycleConfig,
    mc: MeasuredConfig,
    rows: Mapping[str, int],
) -> tuple[list[Replay], str | None]:
    """A failing test's bad rows as a mutation (``impact.measured.failing_assertion`` by the test's class),
    at the share of the table's rows that failed; none, and why, when that cannot be known."""
    if not column:
        return [], "a table-level test names no column to replay"
    kind = lc.classify(assertion)
    spec = mc.failing_assertion.get(kind)
    if not spec:
        return [], f"no mutation replays a failing {kind} test (impact.measured.failing_assertion)"
    total = rows.get(relation(dataset))
    if failed is None or not total:
        known = "no failed-row count" if failed is None else f"no row count for {relation(dataset)}"
        return [], f"the share of failing rows is unknown ({known})"
    table = columns.canonical.get(dataset, dataset)
    why = f"{failed:,} of {total:,} rows fail {assertion}"
    return [Replay((table, column), parse_mutation(spec, min(1.0, failed / total)), why)], None


def replays_for(
    finding: Finding, columns: ColumnGraph, lc: LifecycleConfig, mc: MeasuredConfig, rows: Mapping[str, int]
) -> tuple[list[Replay], str | None]:
    """The mutations replaying a finding, or none and why."""
    if finding.detector == training_source_schema_drift.NAME:
        return _drift_replays(finding, columns, mc)
    if finding.detector == failing_assertion.NAME:
        evidence = finding.evidence
        dataset = evidence.get("dataset") or finding.cause or ""
        return assertion_replay(evidence.get("assertion"), dataset, evidence.get("column"), evidence.get("failed_rows"),
                                columns, lc, mc, rows)
    if finding.detector == upstream_staleness.NAME:
        return [], STALE_REASON
    return [], None


class Measurer:
    """Replays findings on their model, each distinct experiment once per scan."""

    def __init__(
        self,
        columns: ColumnGraph,
        lc: LifecycleConfig,
        ic: ImpactConfig,
        source: ModelSource,
        table_rows: Mapping[str, int],
    ) -> None:
        self.columns, self.lc, self.ic, self.source, self.rows = columns, lc, ic, source, table_rows
        self._done: dict[tuple[str, tuple[str, ...], str, float], ImpactReport] = {}

    def run(self, closure: Closure, replay: Replay) -> ImpactReport | None:
        """The replay on ``closure``'s version; None when the change reaches none of its inputs."""
        affected = affected_models([closure.whole()], self.columns, replay.changed, self.lc)
        if not affected:
            return None
        key = (closure.urn, tuple(i.name for i in affected[0].inputs), replay.mutation.label, replay.mutation.fraction)
        if key not in self._done:
            from recall_dagster.impact.experiment import run_experiment  # pandas, only when something is replayed

            self._done[key] = run_experiment(affected, replay.changed, replay.mutation, self.source, self.ic)
        return self._done[key]

    def measure(self, closure: Closure, finding: Finding) -> Finding:
        mc = self.ic.measured
        if not finding.severity.at_least(mc.min_severity) or (mc.production_only and not closure.production):
            return finding
        replays, reason = replays_for(finding, self.columns, self.lc, mc, self.rows)
        if reason is not None or not replays:
            return _annotated(finding, {"verdict": None, "reason": reason}) if reason else finding
        runs = [(r, self.run(closure, r)) for r in replays]
        measured = [(r, report) for r, report in runs if report is not None]
        if not measured:
            return _annotated(finding, {"verdict": None, "reason": "the change reaches none of its inputs"})
        verdict = worst([report.verdict for _, report in measured])
        evidence = {
            "verdict": verdict.value,
            "experiments": [_experiment(r, report) for r, report in measured],
        }
        return _judged(finding, verdict, evidence, mc)


def _experiment(replay: Replay, report: ImpactReport) -> dict[str, Any]:
    return {
        "change": replay.why,
        "column": column_name(replay.changed),
        "mutation": replay.mutation.label,
        "fraction": round(replay.mutation.fraction, 6),
        "verdict": report.verdict.value,
        "results": [
            {k: v for k, v in r.contract().as_json().items() if k not in ("inputs", "live_deployments", "model_urn")}
            for r in report.results
        ],
    }


def _annotated(finding: Finding, measured: Mapping[str, Any]) -> Finding:
    return replace(finding, evidence={**finding.evidence, "measured": dict(measured)})


def _judged(finding: Finding, verdict: Verdict, evidence: Mapping[str, Any], mc: MeasuredConfig) -> Finding:
    severity = {Verdict.BLOCK: mc.block_severity, Verdict.PASS: mc.pass_severity}.get(verdict, finding.severity)
    decisive = next(
        (r for e in evidence["experiments"] for r in e["results"] if r["verdict"] == verdict.value), None
    )
    said = f"; measured on the model: {verdict.value}" + (f" ({decisive['reason']})" if decisive else "")
    measured = {**evidence, "severity_before": finding.severity.value}
    return replace(
        finding,
        severity=Severity(severity),
        message=finding.message + said,
        evidence={**finding.evidence, "measured": measured},
    )


def _table_rows(
    graph: MetadataGraph, closures: Sequence[ModelClosure], found: Found, lc: LifecycleConfig
) -> dict[str, int]:
    """``schema.table`` -> rows: a DataHub profile's count, else the most any training run counted."""
    rows: dict[str, int] = {}
    for spans in read_training_spans(graph, closures, lc.training_rows_metric).values():
        for table, count in (row for span in spans for row in span.table_rows.items()):
            rows[table] = max(rows.get(table, 0), count)
    failing = [f.evidence.get("dataset") for fs in found.values() for f in fs if f.detector == failing_assertion.NAME]
    rows.update(read_profile_rows(graph, [d for d in failing if d]))
    return rows


def measure_findings(
    graph: MetadataGraph,
    closures: Sequence[Closure],
    found: Found,
    lc: LifecycleConfig,
    ic: ImpactConfig,
    source: ModelSource,
) -> Found:
    """The first pass's findings with every replayable one measured; ``found`` itself when measuring is off
    or nothing qualifies. It comes before the blast radius, which spreads the measured severities."""
    mc = ic.measured
    wanted = [
        c for c in closures
        if (c.production or not mc.production_only)
        and any(f.severity.at_least(mc.min_severity) and f.detector in MEASURED for f in found.get(c.urn, ()))
    ]
    if not mc.enabled or not wanted:
        return found
    measurer = Measurer(column_graph(closures), lc, ic, source, _table_rows(graph, [c.whole() for c in wanted], found, lc))
    by_urn = {c.urn: c for c in closures}
    return {urn: [measurer.measure(by_urn[urn], f) for f in fs] if urn in by_urn else list(fs)
            for urn, fs in found.items()}


def finding_measure(lc: LifecycleConfig, ic: ImpactConfig, source: ModelSource) -> Measure:
    """:func:`measure_findings` with its configuration and models bound: the step the pipeline calls."""

    def measure(graph: MetadataGraph, closures: Sequence[Closure], found: Found) -> Found:
        return measure_findings(graph, closures, found, lc, ic, source)

    return measure


class _MlflowOnFirstLoad:
    """The registry's models, imported (pandas, then MLflow) when a finding is first replayed: a scan or a gate
    on a healthy estate replays nothing and starts without them."""

    def __init__(self, tracking_uri: str, ic: ImpactConfig, warehouse: Warehouse) -> None:
        self.tracking_uri, self.ic, self.warehouse = tracking_uri, ic, warehouse
        self._source: ModelSource | None = None

    def load(self, closure: ModelClosure) -> "Subject":
        if self._source is None:
            from recall_dagster.impact.models import MlflowModels

            self._source = MlflowModels(self.tracking_uri, self.ic, self.warehouse)
        return self._source.load(closure)


def mlflow_measure(settings: Settings, lc: LifecycleConfig, ic: ImpactConfig) -> Measure | None:
    """The measure stage every entry point runs (the scan, the MCP server, the Dagster ``impact_tests`` asset,
    the retrain gate): findings replayed on the versions MLflow holds; None when ``impact.measured`` is off."""
    if not ic.measured.enabled:
        return None
    return finding_measure(lc, ic, _MlflowOnFirstLoad(settings.mlflow_uri, ic, lc.warehouse))
