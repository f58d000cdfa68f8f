"""The latest run of an assertion on a dataset the model depends on failed or errored, and the failure
reaches the model.

Latest as of the scan's instant: a scan ``--as-of`` yesterday does not report a
test that first failed an hour ago, so a verdict holds until the next run of a
test on the closure's data (:func:`holds`).
Reaches as every command judges it (:mod:`recall_dagster.estate.reach`): a
failing column whose recorded lineage leads to none of the model's inputs (a
column staging drops) is not the model's problem, while one lineage loses track
of (an aggregate) still is, through table lineage, as loudly. A failure that
reaches the model only as a suspect (what it reads shares only an origin with
the failing column) is at most WARN, with the evidence that left it one. A failure that
skipped the builds of the model's inputs (:mod:`recall_dagster.estate.frozen`)
is a finding too, at most WARN when it reaches nothing: the model reads the
last good build and will retrain on it.
"""

from __future__ import annotations

from itertools import takewhile

from recall_dagster.detect.config import RecallConfig
from recall_dagster.detect.finding import Finding, finding
from recall_dagster.detect.holds import first_after
from recall_dagster.detect.state import DetectorState
from recall_dagster.estate import Dataset, ModelClosure
from recall_dagster.estate.columns import Col, ColumnGraph
from recall_dagster.estate.failing_test import failing_test
from recall_dagster.estate.measures import assertion_weight
from recall_dagster.estate.reach import passing_columns
from recall_dagster.severity import Severity

NAME = "failing_assertion"
CASES = ("FAILURE", "ERROR")
VOLATILE = True  # judged at the scan's instant, kept until a test runs again (holds)


def detect(closure: ModelClosure, config: RecallConfig, state: DetectorState) -> list[Finding]:
    findings: list[Finding] = []
    graph: ColumnGraph | None = None  # worked out on the first failure: most closures have none
    passing: frozenset[Col] = frozenset()
    for urn, dataset in sorted(closure.datasets.items()):
        for assertion in (a.as_of(closure.scanned_at_ms) for a in dataset.assertions):
            if assertion.result not in CASES:
                continue
            if graph is None:
                graph = state.columns() if state.columns is not None else closure.columns
                passing = passing_columns(closure, graph, closure.scanned_at_ms)
            verdict = failing_test(closure, graph, urn, assertion, config.reach, passing, closure.scanned_at_ms)
            if verdict is None:
                continue
            where = f"{dataset.name}.{assertion.column}" if assertion.column else dataset.name
            verb = "failed" if assertion.result == "FAILURE" else "errored"
            weight = assertion_weight(assertion.failed_rows, assertion.metric, assertion.bound)
            rows = f" ({weight})" if weight else ""
            severity = config.severity(NAME, assertion.result)
            if verdict.quiet:
                severity = Severity.WARN if severity.at_least(Severity.WARN) else severity
            reach = verdict.reach
            findings.append(
                finding(
                    closure,
                    NAME,
                    severity,
                    assertion.urn,
                    f"assertion {assertion.name} on {where} {verb} in its latest run{rows}{verdict.notes}",
                    cause=urn,
                    path=(*closure.path_to(urn), assertion.urn),
                    assertion=assertion.name,
                    dataset=urn,
                    column=assertion.column,
                    result=assertion.result,
                    failed_rows=assertion.failed_rows,
                    metric=dict([assertion.metric]) if assertion.metric else None,
                    ran_at_ms=assertion.ran_at_ms,
                    since_ms=assertion.since_ms,
                    detail=assertion.detail,
                    reach=reach.strength if reach else None,
                    reach_reason=reach.why if reach else None,
                    frozen=[f.to_json() for f in verdict.frozen],
                )
            )
    return findings


def identity(f: Finding) -> dict[str, object]:
    """The test and the streak it is in: a test that passed and failed again is a new failure."""
    return {k: f.evidence.get(k) for k in ("assertion", "dataset", "column", "result", "since_ms")}


def _next_run(dataset: Dataset, at_ms: int) -> int | None:
    """The first run after ``at_ms`` of a test on ``dataset``, or build of it (a build ends a frozen table's
    standing); runs are read newest first."""
    later = (r.at_ms for a in dataset.assertions for r in takewhile(lambda r: r.at_ms > at_ms, a.history))
    return first_after(at_ms, (*(a.ran_at_ms for a in dataset.assertions), *later, *dataset.builds_ms))


def holds(closure: ModelClosure, config: RecallConfig, state: DetectorState) -> int | None:
    """The verdict reads the instant only through what each test's latest run was then
    (:meth:`~recall_dagster.estate.views.Assertion.as_of`) and what was built by then: it holds until the first
    run after it of a test on, or build of, any of the closure's datasets."""
    at = closure.scanned_at_ms
    return state.memo.judgements((NAME, "next run", at)).least(closure.datasets, lambda d: _next_run(d, at))
