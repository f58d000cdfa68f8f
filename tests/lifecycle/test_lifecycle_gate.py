"""The retrain gate's checks on hand-made inputs, and the lifecycle config."""

from __future__ import annotations

from dataclasses import replace

import pytest
from lifecycle_estates import FCT, at, closure, datasets, estate, model_urn, record, span_for

from recall_dagster.acks.model import Accepted
from recall_dagster.detect import Finding, ScanConfig, Severity
from recall_dagster.instants import iso_instant
from recall_dagster.errors import ConfigError
from recall_dagster.estate import Assertion
from recall_dagster.lifecycle.assess import root_causes
from recall_dagster.lifecycle.config import CHECK_NAMES, LifecycleConfig
from recall_dagster.config.load import load, load_yaml_config
from tests.configured import with_section
from recall_dagster.lifecycle.retrain_gate import CHECKS, GateInputs, GateResult, run_gate
from recall_dagster.lifecycle.records import OpenIncident, TrainingSpan


@pytest.fixture(scope="module")
def lc() -> LifecycleConfig:
    return load().lifecycle


@pytest.fixture(scope="module")
def scan_config() -> ScanConfig:
    return load().scan


def inputs(
    lc: LifecycleConfig, scan_config: ScanConfig, *history: tuple[float | None, str],
    trained: TrainingSpan | None = None, **changes,
) -> GateInputs:
    views = datasets()
    latest = history[-1][1] if history else "SUCCESS"
    views[FCT] = replace(
        views[FCT],
        assertions=(Assertion("urn:li:assertion:fct-price", "not_null_unit_price", "unit_price", latest, 223),),
        operations_ms=((at(99), at(99)),),
    )
    version = closure(2, live=True, views=views)
    world = estate([closure(1, live=True, views=views), version])
    spans = {model_urn(1): (span_for(2, 3),), model_urn(2): (trained or span_for(11, 12),)}
    causes = root_causes([record(history, writes=(9,))], world, spans, lc) if history else ()
    base = GateInputs(
        closure=version,
        findings=(),
        causes=causes,
        open_incidents=(),
        span=TrainingSpan("run", at(11), at(12), {"marts.fct_transactions": 1000}),
        current_rows={"marts.fct_transactions": 1000},
        unmeasured_rows={},
        columns=world.columns,
        scan=scan_config,
        config=lc,
        now_ms=at(100),
    )
    return replace(base, **changes)


def statuses(result) -> dict[str, str]:
    return {c.name: c.status for c in result.checks}


def test_the_gate_runs_every_named_check_and_says_go_when_all_pass(lc, scan_config) -> None:
    assert tuple(CHECKS) == CHECK_NAMES and len(CHECK_NAMES) >= 10
    result = run_gate(inputs(lc, scan_config))
    assert result.go and result.contract().as_json()["verdict"] == "GO"
    assert list(statuses(result)) == list(CHECK_NAMES)
    measured = sum(1 for c in result.checks if c.status != "SKIP")
    assert result.line == f"GO: {measured} of {len(CHECK_NAMES)} check(s) measured, none fails"


def test_poisoned_data_blocks_through_three_checks(lc, scan_config) -> None:
    result = run_gate(inputs(lc, scan_config, (0, "SUCCESS"), (10, "FAILURE")))
    assert not result.go
    assert {c.name for c in result.failing} == {"active_incidents", "failing_assertions", "contaminated_version"}
    assert result.line == (
        "NO-GO: active_incidents: 1 open incident(s) · failing_assertions: 1 failing test(s) upstream"
        " · also contaminated_version"
    ), "one line an operator reads in a table: the first two failing checks summed up, the rest named"
    assert "1 of 4 features poisoned, 1 suspect" in " ".join(next(c for c in result.checks if c.name == "active_incidents").details)


def test_a_version_whose_training_time_is_unknown_is_skipped_not_passed(lc, scan_config) -> None:
    unknown = TrainingSpan("run", None, None)
    result = run_gate(inputs(lc, scan_config, (0, "SUCCESS"), (10, "FAILURE"), (20, "SUCCESS"), trained=unknown))
    check = next(c for c in result.checks if c.name == "contaminated_version")
    assert check.status == "SKIP" and check.summary.endswith("is UNKNOWN")
    strict = lc.model_copy(update={"gate": lc.gate.model_copy(update={"block_unknown": True})})
    blocked = run_gate(inputs(strict, scan_config, (0, "SUCCESS"), (10, "FAILURE"), (20, "SUCCESS"), trained=unknown))
    assert "contaminated_version" in {c.name for c in blocked.failing}


def test_after_the_heal_the_contaminated_version_still_blocks_until_replaced(lc, scan_config) -> None:
    result = run_gate(inputs(lc, scan_config, (0, "SUCCESS"), (10, "FAILURE"), (20, "SUCCESS")))
    assert [c.name for c in result.failing] == ["contaminated_version"]


def test_row_count_drop_freshness_and_coverage(lc, scan_config) -> None:
    shrunk = run_gate(inputs(lc, scan_config, current_rows={"marts.fct_transactions": 700}))
    assert [c.name for c in shrunk.failing] == ["row_count_drop"]
    unmeasured = run_gate(inputs(lc, scan_config, current_rows={}, span=None))
    assert statuses(unmeasured)["row_count_drop"] == "SKIP" and unmeasured.go
    uncounted = run_gate(inputs(lc, scan_config, current_rows={}, unmeasured_rows={"marts.fct_transactions": "why"}))
    row_check = next(c for c in uncounted.checks if c.name == "row_count_drop")
    assert row_check.status == "SKIP" and row_check.details == ("marts.fct_transactions: why",)
    stale = run_gate(inputs(lc, scan_config, now_ms=at(99 + 24 * 30)))
    assert [c.name for c in stale.failing] == ["input_freshness"]
    version = inputs(lc, scan_config).closure
    orphan = replace(version, features=(*version.features, replace(version.features[0], name="gone", column="gone")))
    covered = run_gate(inputs(lc, scan_config, closure=orphan))
    assert [c.name for c in covered.failing] == ["feature_coverage"]


def test_detector_findings_open_incidents_and_disabled_checks(lc, scan_config) -> None:
    drift = Finding("training_source_schema_drift", Severity.CRITICAL, FCT, "amount changed type")
    owner = Finding("ownership_vacuum", Severity.INFO, FCT, "below the gate's severity")
    other = OpenIncident("urn:li:incident:x", "broken feed", (FCT,))
    result = run_gate(inputs(lc, scan_config, findings=(drift, owner), open_incidents=(other,)))
    assert {c.name for c in result.failing} == {"schema_drift", "active_incidents"}
    quiet = lc.model_copy(update={"gate": lc.gate.model_copy(update={"disabled": ["schema_drift", "active_incidents"]})})
    assert run_gate(inputs(quiet, scan_config, findings=(drift,), open_incidents=(other,))).go


def test_config_errors_name_the_key() -> None:
    section = load_yaml_config()[0]["lifecycle"]
    with pytest.raises(ConfigError, match="gate.disabled"):
        with_section("lifecycle", {**section, "gate": {**section["gate"], "disabled": ["no_such_check"]}})
    with pytest.raises(ConfigError, match="share 0"):
        with_section("lifecycle", {**section, "severity": {**section["severity"], "bands": {"HIGH": 0.5}}})
    with pytest.raises(ConfigError, match="failing_results"):
        with_section("lifecycle", {k: v for k, v in section.items() if k != "failing_results"})


def test_a_version_the_scan_scores_at_the_fail_tier_is_refused_and_the_critical_findings_named(
    lc, scan_config
) -> None:
    critical = Finding("training_serving_skew", Severity.CRITICAL, FCT, "serves from a table training never read")
    info = Finding("blast_radius", Severity.INFO, FCT, "at risk")
    one = run_gate(inputs(lc, scan_config, findings=(critical, info)))
    assert statuses(one)["risk_tier"] == "PASS", "one CRITICAL on two live deployments scores 39: AT_RISK"
    two = run_gate(inputs(lc, scan_config, findings=(critical, replace(critical, subject="other"), info)))
    tier = next(c for c in two.checks if c.name == "risk_tier")
    assert tier.status == "FAIL" and tier.summary.startswith("CRITICAL")
    assert tier.details == ("[training_serving_skew] serves from a table training never read",) * 2
    assert two.findings[-1] is info, "the result carries every finding for readers like the Dagster UI"
    assert two.line.startswith("NO-GO: training_serving_skew: 2 finding(s)") and two.line.endswith(
        " · risk_tier: CRITICAL (score 70); the gate tier is CRITICAL"), (
        "the check naming the cause leads the operator's line; the tier that sums the findings up follows it")


def test_a_required_check_that_cannot_measure_makes_the_verdict_unverified_never_go(lc, scan_config) -> None:
    untested = inputs(lc, scan_config)
    views = {u: replace(d, assertions=()) for u, d in untested.closure.datasets.items()}
    result = run_gate(replace(untested, closure=replace(untested.closure, datasets=views)))
    assert statuses(result)["failing_assertions"] == "SKIP"
    assert result.verdict == "UNVERIFIED" and not result.go
    assert result.contract().as_json()["unverified_checks"] == ["failing_assertions"]
    relaxed = lc.model_copy(update={"gate": lc.gate.model_copy(update={"required": ["input_freshness"]})})
    assert run_gate(replace(untested, config=relaxed, closure=replace(untested.closure, datasets=views))).go
    missing = GateResult.unverified("churn", "no registered model 'churn' in the graph", at(1))
    assert missing.verdict == "UNVERIFIED" and missing.contract().as_json()["reason"].startswith("no registered model")
    assert missing.line == "UNVERIFIED: no registered model 'churn' in the graph"
    assert result.line.startswith("UNVERIFIED: failing_assertions: "), "the required check that could not measure"


def test_required_checks_must_be_known_checks() -> None:
    section = load_yaml_config()[0]["lifecycle"]
    with pytest.raises(ConfigError, match="gate.required"):
        with_section("lifecycle", {**section, "gate": {**section["gate"], "required": ["no_such_check"]}})


def test_an_ownership_gap_warns_but_does_not_refuse_the_retrain_by_default(lc, scan_config) -> None:
    gap = Finding("ownership_vacuum", Severity.WARN, model_urn(2), "model fraud_detector_2 has no owner", {})
    result = run_gate(inputs(lc, scan_config, findings=(gap,)))
    assert result.go, "stock sources write no owners: the gap is shown, not blocking"
    ownership = next(c for c in result.checks if c.name == "ownership")
    assert (ownership.status, ownership.details) == ("WARN", ("[WARN] model fraud_detector_2 has no owner",))
    assert "Advisory check(s) warn: ownership" in result.contract().as_json()["narrative"]
    strict = lc.model_copy(update={"gate": lc.gate.model_copy(update={"advisory": []})})
    assert not run_gate(inputs(strict, scan_config, findings=(gap,))).go, "recall.yaml can make it block again"


def test_a_check_that_passes_on_an_acknowledgement_says_who_until_when_and_why(lc, scan_config) -> None:
    gap = Finding("ownership_vacuum", Severity.WARN, model_urn(2), "model fraud_detector_2 has no owner", {})
    accepted = (gap, Accepted("ack1", "ana", "owners come with the reorg", at(200)))
    ownership = next(c for c in run_gate(inputs(lc, scan_config, accepted=(accepted,))).checks if c.name == "ownership")
    assert (ownership.status, ownership.summary) == ("PASS", "1 finding(s) acknowledged, none open")
    assert ownership.details == (
        f"model fraud_detector_2 has no owner: accepted by ana until {iso_instant(at(200))} (owners come with the reorg)",
    ), "never 'it and its data have active owners' when they have none"
