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

A failing test on a table the model does not read may still reach it as a
suspect, through a column sharing an origin with the failing one (a sibling
computed from the same source). The model's closure does not hold that table,
so the second pass asks it of the estate (:func:`outside`), over the failing
tests the first pass found on other closures, as incidents and the blind window
do: every command then names the same suspects.
"""

from __future__ import annotations

from itertools import takewhile
from typing import Callable, Mapping, Sequence

from recall_dagster.detect.config import ScanConfig
from recall_dagster.detect.finding import Finding, finding
from recall_dagster.detect.holds import first_after
from recall_dagster.detect.state import DetectorState
from recall_dagster.estate import Closure, Dataset, ModelClosure
from recall_dagster.estate.columns import Col, ColumnGraph
from recall_dagster.estate.failing_test import FailingTest, failing_test
from recall_dagster.estate.measures import assertion_weight
from recall_dagster.estate.reach import origins_of, passing_columns, reaches
from recall_dagster.estate.views import Assertion
from recall_dagster.severity import Severity
from recall_dagster.detect.declared import Detector, Reads

NAME = "failing_assertion"
CASES = ("FAILURE", "ERROR")


def detect(closure: ModelClosure, config: ScanConfig, state: DetectorState) -> list[Finding]:
    findings: list[Finding] = []
    graph: ColumnGraph | None = None  # worked out on the first failure: most closures have none
    passing: frozenset[Col] = frozenset()
    at = state.at_ms
    for urn, dataset in sorted(closure.datasets.items()):
        for assertion in (a.as_of(at) for a in dataset.assertions):
            if assertion.result not in CASES:
                continue
            if graph is None:
                graph = state.columns() if state.columns is not None else closure.columns
                passing = passing_columns(closure, graph, at)
            verdict = failing_test(closure, graph, urn, assertion, config.reach, passing, at)
            if verdict is not None:
                findings.append(_finding(closure, config, urn, dataset.name, assertion, verdict,
                                         closure.path_to(urn)))
    return findings


Failing = tuple[str, str, Assertion]  # a failing test: its dataset's URN and name, and the test as of the instant


def failing_found(
    closures: Sequence[Closure], found: Mapping[str, Sequence[Finding]], at_ms: int
) -> list[Failing]:
    """The failing tests the first pass ``found`` on the closures at ``at_ms``: read from the few closures holding one, so a
    rescan decodes no kept closure to learn that nothing fails."""
    tests: list[Failing] = []
    for closure in closures:
        for f in found.get(closure.urn, ()):
            if f.detector == NAME and not is_outside(f) and f.cause:
                dataset = closure.dataset(f.cause)
                tests += [(f.cause, dataset.name, a.as_of(at_ms))
                          for a in dataset.assertions if a.urn == f.subject]
    return tests


def failing_held(closures: Sequence[Closure], at_ms: int) -> list[Failing]:
    """Every failing test the closures hold at ``at_ms`` (an estate read whole, as the lifecycle reads it)."""
    return [(urn, dataset.name, assertion) for closure in closures for urn, dataset in closure.whole().datasets.items()
            for assertion in (a.as_of(at_ms) for a in dataset.assertions)
            if assertion.result in CASES]


def outside(closures: Sequence[Closure], config: ScanConfig, columns: Callable[[], ColumnGraph],
            failing: Sequence[Failing], at_ms: int) -> Mapping[str, tuple[Finding, ...]]:
    """Model URN -> the ``failing`` tests on tables its closure does not hold that reach it (always as a suspect:
    what descends from the failing column would hold the failing table upstream); ``columns`` gives the
    estate's column lineage, asked only when some test fails. A closure whose tables hold no origin of a
    failing column is passed over without decoding it."""
    tests = {a.urn: (urn, name, a) for urn, name, a in failing}
    if not tests or not config.enabled(NAME):
        return {}
    graph = columns()
    origins = {a: {t for t, _ in origins_of(urn, assertion.column, graph, config.reach)}
               for a, (urn, _, assertion) in tests.items()}
    home = {a: graph.canonical.get(urn, urn) for a, (urn, _, _) in tests.items()}  # the table each test is on
    near: dict[str, set[str]] = {}  # table -> the failing tests it is an origin of: a closure asks its own tables
    for a, tables_of in origins.items():
        for table in tables_of:
            near.setdefault(table, set()).add(a)
    found: dict[str, tuple[Finding, ...]] = {}
    for closure in closures:
        tables = {graph.canonical.get(u, u): u for u in closure.dataset_urns}
        reached = {a for t in tables for a in near.get(t, ())}
        mine = [tests[a] for a in sorted(reached) if home[a] not in tables]
        if not mine:
            continue
        whole = closure.whole()
        passing = passing_columns(whole, graph, at_ms)
        hits = []
        for urn, name, assertion in mine:
            reach = reaches(whole, graph, urn, assertion.column, config.reach, passing)
            if reach is None:
                continue
            shared = (*(f.lineage[0][0] for f in reach.suspect), *sorted(origins[assertion.urn]))
            origin = next(tables[t] for t in shared if t in tables)
            hits.append(_finding(whole, config, urn, name, assertion, FailingTest(reach, ()),
                                 (*whole.path_to(origin), urn), outside_closure=True))
        if hits:
            found[closure.urn] = tuple(hits)
    return found


def _finding(closure: ModelClosure, config: ScanConfig, urn: str, name: str, assertion: Assertion,
             verdict: FailingTest, path: tuple[str, ...], **more: object) -> Finding:
    where = f"{name}.{assertion.column}" if assertion.column else name
    verb = "failed" if assertion.result == "FAILURE" else "errored"
    weight = assertion_weight(assertion.failed_rows, assertion.metric, assertion.bound)
    rows = f" ({weight})" if weight else ""
    severity = config.severity(NAME, assertion.result or "FAILURE")
    if verdict.quiet:
        severity = Severity.WARN if severity.at_least(Severity.WARN) else severity
    reach = verdict.reach
    return finding(
        closure,
        NAME,
        severity,
        assertion.urn,
        f"assertion {assertion.name} on {where} {verb} in its latest run{rows}{verdict.notes}",
        cause=urn,
        path=(*path, assertion.urn),
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
        **more,
    )


def is_outside(f: Finding) -> bool:
    """Whether the second pass made ``f`` (:func:`outside`), not the model's own closure."""
    return f.detector == NAME and bool(f.evidence.get("outside_closure"))


def identity(f: Finding) -> dict[str, object]:
    """The test and the streak it is in: a test that passed and failed again is a new failure."""
    return {k: f.evidence.get(k) for k in ("assertion", "dataset", "column", "result", "since_ms")}


def _next_run(dataset: Dataset, at_ms: int) -> int | None:
    """The first run after ``at_ms`` of a test on ``dataset``, or build of it (a build ends a frozen table's
    standing); runs are read newest first."""
    later = (r.at_ms for a in dataset.assertions for r in takewhile(lambda r: r.at_ms > at_ms, a.history))
    return first_after(at_ms, (*(a.ran_at_ms for a in dataset.assertions), *later, *dataset.builds_ms))


def holds(closure: ModelClosure, config: ScanConfig, state: DetectorState) -> int | None:
    """The verdict reads the instant only through what each test's latest run was then
    (:meth:`~recall_dagster.estate.views.Assertion.as_of`) and what was built by then: it holds until the first
    run after it of a test on, or build of, any of the closure's datasets."""
    at = state.at_ms
    return state.memo.judgements((NAME, "next run", at)).least(closure.datasets, lambda d: _next_run(d, at))


DETECTOR = Detector(NAME, detect, CASES, Reads.INSTANT, identity=identity, holds=holds)
