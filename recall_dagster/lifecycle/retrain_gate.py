"""The retrain gate: named checks over one model version, GO only when every one passes.

Each check is a pure function of :class:`GateInputs` (the version's closure,
the scan detectors' findings on it, the root causes, the incidents open on its
training data, its last training run, the row counts now, the instant), so the
CLI, the Dagster blocking check and a test reach the same verdict from the same
inputs.  A check that cannot measure (no row counts recorded, no freshness
record, no test on the training data) is SKIP with its reason, never PASS; when
a check ``recall.yaml`` marks required is skipped the verdict is UNVERIFIED,
not GO: a gate that could not look must not say the way is clear.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable, Literal, Mapping, Sequence

from recall_dagster.acks.model import Accepted
from recall_dagster.contracts import lifecycle as contracts
from recall_dagster.contracts.base import VERSION
from recall_dagster.detect import (
    Finding,
    ScanConfig,
    Severity,
    deprecated_upstream,
    orphaned_feature,
    ownership_vacuum,
    pii_exposure,
    training_serving_skew,
    training_source_schema_drift,
)
from recall_dagster.detect.freshness import judge_table
from recall_dagster.estate import ModelClosure, display_name
from recall_dagster.detect.failing_assertion import is_outside
from recall_dagster.estate.failing_test import failing_test
from recall_dagster.estate.measures import assertion_weight
from recall_dagster.estate.reach import passing_columns
from recall_dagster.lifecycle.assess import RootCause
from recall_dagster.estate.columns import ColumnGraph
from recall_dagster.estate.views import Freshness
from recall_dagster.lifecycle.config import CHECK_NAMES, LifecycleConfig
from recall_dagster.lifecycle.observed import Observed
from recall_dagster.lifecycle.records import OpenIncident, TrainingSpan
from recall_dagster.lifecycle.trained_by import DagsterRun
from recall_dagster.lifecycle.verdict import Status
from recall_dagster.narrate import gate_paragraph
from recall_dagster.instants import iso_instant
from recall_dagster.score import score_model

CheckStatus = Literal["PASS", "WARN", "FAIL", "SKIP"]  # WARN: heard, never blocking (a suspect, or advisory)
Verdict = Literal["GO", "NO-GO", "UNVERIFIED"]


@dataclass(frozen=True)
class CheckResult:
    name: str
    status: CheckStatus
    summary: str
    details: tuple[str, ...] = ()
    # it sums up what other checks name (the scan's tier over its findings): a cause named leads the gate's line
    sums_up: bool = False

    def contract(self) -> contracts.Check:
        return contracts.Check(name=self.name, status=self.status, summary=self.summary, details=list(self.details))


@dataclass(frozen=True)
class GateInputs:
    closure: ModelClosure  # the version judged
    findings: Sequence[Finding]  # the scan detectors' findings on it
    causes: Sequence[RootCause]
    open_incidents: Sequence[OpenIncident]  # ACTIVE DataHub incidents on its training data, raised by others
    span: TrainingSpan | None  # the training run it was last fit on
    current_rows: Mapping[str, int]  # "schema.table" -> rows now, where measured
    unmeasured_rows: Mapping[str, str]  # "schema.table" -> why its rows could not be counted now
    columns: ColumnGraph
    scan: ScanConfig
    config: LifecycleConfig
    now_ms: int
    measured: bool = False  # whether the findings were replayed on the model (impact.measured)
    accepted: tuple[tuple[Finding, Accepted], ...] = ()  # findings an acknowledgement covers: not held against it
    observed: Mapping[str, Observed] = field(default_factory=dict)  # direct input -> what the orchestrator saw


def training_data(closure: ModelClosure) -> frozenset[str]:
    """What a retrain reads (recorded inputs and feature sources) and everything upstream of it."""
    return closure.upstream_of(closure.direct_inputs)


def _result(name: str, problems: Sequence[str], ok: str, bad: str, notes: Sequence[str] = ()) -> CheckResult:
    if problems:
        return CheckResult(name, "FAIL", bad.format(n=len(problems)), tuple(problems))
    return CheckResult(name, "PASS", ok, tuple(notes))


def _detector_check(name: str, detectors: tuple[str, ...], ok: str) -> Callable[[GateInputs], CheckResult]:
    """A check backed by the scan's detectors: their findings at or above the gate's severity fail it; one
    that passes only because findings were acknowledged says so, with who accepted them, why and until when."""

    def check(inputs: GateInputs) -> CheckResult:
        floor = inputs.config.gate.min_severity
        problems = [
            f"[{f.severity.value}] {f.message}"
            for f in inputs.findings
            if f.detector in detectors and f.severity.at_least(floor)
        ]
        accepted = [(f, a) for f, a in inputs.accepted if f.detector in detectors and f.severity.at_least(floor)]
        if problems or not accepted:
            return _result(name, problems, ok, "{n} finding(s) at " + floor.value + " or above")
        return CheckResult(name, "PASS", f"{len(accepted)} finding(s) acknowledged, none open", tuple(
            f"{f.message}: accepted by {a.by} until {iso_instant(a.until_ms)} ({a.reason})" for f, a in accepted
        ))

    return check


def risk_tier(inputs: GateInputs) -> CheckResult:
    """The scan's own verdict: a version the nightly scan reports at the fail tier is not retrained."""
    scoring = inputs.scan.scoring
    score = score_model(inputs.findings, len(inputs.closure.live_deployments), scoring)
    summary = f"{score.tier} (score {score.value}); the gate tier is {scoring.fail_tier}"
    if not scoring.at_or_above(score.tier, scoring.fail_tier):
        return CheckResult("risk_tier", "PASS", summary, sums_up=True)
    critical = [f"[{f.detector}] {f.message}" for f in inputs.findings if f.severity is Severity.CRITICAL]
    return CheckResult("risk_tier", "FAIL", summary, tuple(critical), sums_up=True)


def active_incidents(inputs: GateInputs) -> CheckResult:
    problems = []
    for cause in inputs.causes:
        impact = cause.blast.impact_on(inputs.closure.urn)
        if cause.active and impact is not None:
            tests = ", ".join(r.name for r in cause.records if r.urn in cause.failing)
            problems.append(f"poisoned data ({tests}): {impact.summary} [{impact.severity}]")
    problems += [
        f"{i.title} ({i.urn}) on {', '.join(display_name(d) for d in i.datasets)}" for i in inputs.open_incidents
    ]
    return _result("active_incidents", problems, "no open incident touches its training data", "{n} open incident(s)")


def failing_assertions(inputs: GateInputs) -> CheckResult:
    """Each test on the training data as it stood at the gate's instant, as the scan judges it: a run
    recorded after the instant is not yet known (``--as-of``, or a runner's clock ahead of ours), and a
    failure counts when it reaches the model by the rule every command applies
    (:mod:`recall_dagster.estate.reach`). One that reaches it only as a suspect, or that only skipped the builds of
    the tables it reads (:mod:`recall_dagster.estate.frozen`: a retrain would read the last good build), warns
    without blocking; so does a failing test on a table it does not read whose failing column shares an origin
    with what it reads (the scan's finding, sought over the estate)."""
    closure = inputs.closure
    read = sorted(training_data(closure))
    elsewhere = [(f.message, True) for f in inputs.findings if is_outside(f)]  # a sibling's failing test
    if not elsewhere and not any(closure.dataset(urn).assertions for urn in read):
        return CheckResult("failing_assertions", "SKIP", "no test or assertion covers its training data")
    passing = passing_columns(closure, inputs.columns, inputs.now_ms)
    reached = [
        (f"{a.name} on {dataset.name}{'.' + a.column if a.column else ''}: {a.result}"
         + (f" ({weight})" if (weight := assertion_weight(a.failed_rows, a.metric, a.bound)) else "")
         + verdict.notes, verdict.quiet)
        for urn in read
        for dataset in [closure.dataset(urn)]
        for a in (t.as_of(inputs.now_ms) for t in dataset.assertions)
        if inputs.config.failing(a.result)
        and (verdict := failing_test(closure, inputs.columns, urn, a, inputs.config.reach, passing,
                                     inputs.now_ms)) is not None
    ] + elsewhere
    problems = [line for line, _ in reached]
    if problems and all(quiet for _, quiet in reached):
        return CheckResult("failing_assertions", "WARN", f"{len(problems)} failing test(s) upstream reach it only "
                           "as suspects or froze the builds it reads", tuple(problems))
    return _result(
        "failing_assertions", problems, "every test on its training data passes", "{n} failing test(s) upstream"
    )


def contaminated_version(inputs: GateInputs) -> CheckResult:
    """CONTAMINATED blocks; UNKNOWN is a verdict nobody could reach, never a pass, and blocks only under
    ``block_unknown``; SUSPECT (trained inside the window on data the failure may not have touched) warns."""
    verdicts = [v for c in inputs.causes if (v := c.versions_of(inputs.closure.urn)) is not None]
    unknown: CheckStatus = "FAIL" if inputs.config.gate.block_unknown else "SKIP"
    outcome: dict[Status, CheckStatus] = {Status.CONTAMINATED: "FAIL", Status.UNKNOWN: unknown, Status.SUSPECT: "WARN"}
    judged = sorted(((outcome[v.verdict.status], v) for v in verdicts if v.verdict.status in outcome),
                    key=lambda pair: ("FAIL", "WARN", "SKIP").index(pair[0]))
    name = inputs.closure.model.name
    if not judged:
        return CheckResult("contaminated_version", "PASS", f"{name} was trained outside every blind window")
    status, worst = judged[0]
    trained = (f"trained by {worst.trained_by.label}",) if worst.trained_by else ()
    return CheckResult("contaminated_version", status, f"{name} is {worst.verdict.status.value}",
                       (worst.verdict.reason, *trained))


# What the gate looked for when it cannot tell a training input's freshness (Dataset.freshness_at).
FRESHNESS_LOOKED_FOR = (
    "looked for: operations, a successful build that writes it (dbt run_results.json through DataHub's dbt "
    "source), dbt source freshness (sources.json), the platform's lastModified, the freshness property "
    "in recall.yaml, and, inside Dagster, the last materialization of the asset writing it"
)


def input_freshness(inputs: GateInputs) -> CheckResult:
    """Each training input judged as the scan judges its table (:mod:`recall_dagster.detect.freshness`), with
    what the orchestrator saw written as one more record."""
    problems, unknown, told = [], [], []
    for urn in inputs.closure.direct_inputs:
        dagster = inputs.observed.get(urn)
        seen = (Freshness(dagster.updated_ms, dagster.source),) if dagster is not None else ()
        policy = (dagster.window_hours,) if dagster is not None and dagster.window_hours is not None else ()
        table = judge_table(inputs.closure.same_table(urn), inputs.now_ms, inputs.scan.freshness, seen, policy)
        name = inputs.closure.dataset(urn).name
        if table.last is None or table.age_hours is None:
            unknown.append(f"{name}: nobody records when it changes")
            continue
        via = f" ({table.last.source})" if dagster is not None and table.recorded_on is None else ""
        if table.stale:
            whose = " (Dagster's freshness policy)" if policy and policy[0] <= table.window_hours else ""
            problems.append(f"{name} last changed {table.age_hours:.1f} h ago{via}, past its "
                            f"{table.window_hours:g} h window{whose}")
        elif via:
            told.append(f"{name} last changed {table.age_hours:.1f} h ago{via}")
    if not problems and len(unknown) == len(inputs.closure.direct_inputs):
        summary = "no training input records when it changes" if unknown else "no training input is known"
        return CheckResult("input_freshness", "SKIP", summary, (*unknown, FRESHNESS_LOOKED_FOR))
    return _result("input_freshness", problems, "every training input is within its freshness window",
                   "{n} stale training input(s)", (*told, *unknown))


def row_count_drop(inputs: GateInputs) -> CheckResult:
    trained = inputs.span.table_rows if inputs.span else {}
    if not trained:
        return CheckResult("row_count_drop", "SKIP", "its training run recorded no row counts")
    problems: list[str] = []
    notes: list[str] = []
    limit = inputs.config.gate.max_row_drop
    if not any(table in inputs.current_rows for table in trained):
        return CheckResult("row_count_drop", "SKIP", "no training input could be counted now", tuple(
            f"{table}: {inputs.unmeasured_rows.get(table, 'no count')}" for table in sorted(trained)
        ))
    for table, then in sorted(trained.items()):
        now = inputs.current_rows.get(table)
        if now is None:
            notes.append(f"{table}: not measured now ({inputs.unmeasured_rows.get(table, 'no count')})")
            continue
        drop = (then - now) / then if then else 0.0
        line = f"{table}: {then:,} rows at training, {now:,} now"
        (problems if drop > limit else notes).append(line + (f" ({drop:.0%} fewer)" if drop > 0 else ""))
    return _result("row_count_drop", problems, f"no input lost more than {limit:.0%} of its rows",
                   "{n} input(s) shrank past the limit", notes)


def feature_coverage(inputs: GateInputs) -> CheckResult:
    """Every feature must resolve to a column that exists on its source, or lineage cannot vouch for it."""
    features = inputs.closure.features
    if not features:
        return CheckResult("feature_coverage", "SKIP", "the version records no features")
    gaps = []
    for f in features:
        sources = [inputs.columns.canonical.get(s, s) for s in f.sources]
        column = f.column or f.name
        if f.missing or f.removed:
            gaps.append(f"{f.name}: not in the catalog")
        elif not any(column in inputs.columns.columns.get(s, ()) for s in sources):
            where = ", ".join(display_name(s) for s in sources) or "no source"
            gaps.append(f"{f.name}: column {column} not found on {where}")
    share = 1 - len(gaps) / len(features)
    summary = f"{share:.0%} of features resolve to a source column"
    if share >= inputs.config.gate.min_feature_coverage:
        return CheckResult("feature_coverage", "PASS", summary, tuple(gaps))
    return CheckResult("feature_coverage", "FAIL", f"only {summary}", tuple(gaps))


def measured_impact(inputs: GateInputs) -> CheckResult:
    """Findings replayed on the model: one whose replay BLOCKs fails the gate; none replayable is no evidence."""
    if not inputs.measured:
        return CheckResult("measured_impact", "SKIP", "measuring findings on the model is off (impact.measured)")
    measured = [(f, f.evidence["measured"]) for f in inputs.findings if "measured" in f.evidence]
    if not measured:
        return CheckResult("measured_impact", "PASS", "no finding upstream to replay on the model")
    blocked = [f"{f.detector}: {f.message}" for f, m in measured if m.get("verdict") == "BLOCK"]
    judged = [m for _, m in measured if m.get("verdict") not in (None, "INCOMPLETE")]
    notes = [f"{f.detector} ({m.get('verdict') or 'unmeasured'}): {m.get('reason') or f.message}"
             for f, m in measured if m.get("verdict") in (None, "INCOMPLETE")]
    if not blocked and not judged:
        return CheckResult("measured_impact", "SKIP", "no finding could be replayed on the model", tuple(notes))
    return _result("measured_impact", blocked, f"{len(judged)} finding(s) replayed on the model, none blocks",
                   "{n} finding(s) the model measurably fails on", notes)


CHECKS: Mapping[str, Callable[[GateInputs], CheckResult]] = {
    "risk_tier": risk_tier,
    "active_incidents": active_incidents,
    "failing_assertions": failing_assertions,
    "contaminated_version": contaminated_version,
    "input_freshness": input_freshness,
    "schema_drift": _detector_check(
        "schema_drift", (training_source_schema_drift.NAME,), "no unacknowledged schema change on its inputs"
    ),
    "training_serving_skew": _detector_check(
        "training_serving_skew", (training_serving_skew.NAME,), "training and serving read the same data"
    ),
    "ownership": _detector_check("ownership", (ownership_vacuum.NAME,), "it and its data have active owners"),
    "pii_justification": _detector_check(
        "pii_justification", (pii_exposure.NAME,), "no unjustified personal data reaches it"
    ),
    "row_count_drop": row_count_drop,
    "feature_coverage": feature_coverage,
    "deprecated_inputs": _detector_check(
        "deprecated_inputs", (deprecated_upstream.NAME, orphaned_feature.NAME), "no deprecated or orphaned input"
    ),
    "measured_impact": measured_impact,
}


LINE_CHECKS = 2  # the failing checks one line sums up before it only names the rest


@dataclass(frozen=True)
class GateResult:
    model: str  # the version judged, or what was asked for when no version was found
    name: str
    registered_model: str
    judged_at_ms: int
    checks: tuple[CheckResult, ...]
    findings: tuple[Finding, ...] = ()  # the scan's findings on the version, for a reader who wants them all
    required: frozenset[str] = frozenset()  # checks whose SKIP makes the verdict UNVERIFIED
    reason: str | None = None  # why no version could be judged at all
    accepted: tuple[tuple[Finding, Accepted], ...] = ()  # the acknowledgements the verdict relied on
    trained_by: DagsterRun | None = None  # the Dagster run that trained the version judged

    @classmethod
    def unverified(cls, model: str, reason: str, judged_at_ms: int) -> "GateResult":
        """The verdict when there is no version to judge: never GO for want of evidence."""
        return cls(model=model, name=model, registered_model=model, judged_at_ms=judged_at_ms, checks=(),
                   reason=reason)

    @property
    def failing(self) -> tuple[CheckResult, ...]:
        return tuple(c for c in self.checks if c.status == "FAIL")

    @property
    def unverified_checks(self) -> tuple[CheckResult, ...]:
        """Required checks that could not measure."""
        return tuple(c for c in self.checks if c.status == "SKIP" and c.name in self.required)

    @property
    def verdict(self) -> Verdict:
        if self.failing:
            return "NO-GO"
        if self.reason is not None or self.unverified_checks:
            return "UNVERIFIED"
        return "GO"

    @property
    def measured(self) -> int:
        """How many checks could measure (did not SKIP)."""
        return sum(1 for c in self.checks if c.status != "SKIP")

    @property
    def go(self) -> bool:
        return self.verdict == "GO"

    @property
    def line(self) -> str:
        """The verdict in the one line an operator reads in a table (Dagster's check row, a refusal, a log line):
        what refuses first, the checks' details stay behind it."""
        if self.verdict == "GO":
            return f"GO: {self.measured} of {len(self.checks)} check(s) measured, none fails"
        why = sorted(self.failing or self.unverified_checks, key=lambda c: c.sums_up)
        if not why:
            return f"{self.verdict}: {self.reason or 'nothing could be verified'}"
        rest = f" · also {', '.join(c.name for c in why[LINE_CHECKS:])}" if len(why) > LINE_CHECKS else ""
        return f"{self.verdict}: " + " · ".join(f"{c.name}: {c.summary}" for c in why[:LINE_CHECKS]) + rest

    def contract(self) -> contracts.Gate:
        """``recall gate --json``: the narrative is written from the rest of the answer, as a reader gets it."""
        answer = contracts.Gate(
            schema_version=VERSION,
            model=self.model,
            name=self.name,
            registered_model=self.registered_model,
            judged_at=iso_instant(self.judged_at_ms),
            verdict=self.verdict,
            reason=self.reason,
            failing_checks=[c.name for c in self.failing],
            unverified_checks=[c.name for c in self.unverified_checks],
            coverage=contracts.GateCoverage(
                checks=len(self.checks),
                measured=self.measured,
                skipped={c.name: c.summary for c in self.checks if c.status == "SKIP"},
            ),
            checks=[c.contract() for c in self.checks],
            acknowledged=[
                {**a.contract().as_json(), "detector": f.detector, "subject": f.subject, "message": f.message}
                for f, a in self.accepted
            ],
            trained_by=self.trained_by.contract() if self.trained_by else None,
            narrative="",
        )
        answer.narrative = gate_paragraph(answer.as_json())
        return answer


def _advised(result: CheckResult, advisory: bool) -> CheckResult:
    """A failure of a check recall.yaml makes advisory is shown as WARN and refuses nothing."""
    if not advisory or result.status != "FAIL":
        return result
    return replace(result, status="WARN", summary=f"{result.summary} (advisory: lifecycle.gate.advisory)")


def run_gate(inputs: GateInputs) -> GateResult:
    """Every enabled check, in report order; GO when none fails and no required one was skipped."""
    skipped, advisory = inputs.config.gate.disabled, inputs.config.gate.advisory
    checks = tuple(
        _advised(CHECKS[name](inputs), name in advisory) if name not in skipped
        else CheckResult(name, "SKIP", "disabled in recall.yaml")
        for name in CHECK_NAMES
    )
    return GateResult(
        model=inputs.closure.urn,
        name=inputs.closure.model.name,
        registered_model=inputs.closure.registered_name,
        judged_at_ms=inputs.now_ms,
        checks=checks,
        findings=tuple(inputs.findings),
        required=frozenset(inputs.config.gate.required).difference(skipped),
        accepted=inputs.accepted,
        trained_by=DagsterRun.of(inputs.closure.model.properties, inputs.config.dagster_url),
    )
