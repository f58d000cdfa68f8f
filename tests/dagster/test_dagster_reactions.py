"""The reactions' choice of models and the Markdown the UI shows: pure functions."""

from __future__ import annotations

import pytest

from recall_dagster.detect import Finding, ScanConfig, Severity
from recall_dagster.detect.blast_radius import BlastRadius
from recall_dagster.estate import Dataset, Deployment, Feature, Model, ModelClosure, TrainingRun, assemble_closure
from recall_dagster.reactions import (
    AssertionResult,
    Registration,
    highest_versions,
    models_reading,
    unhandled_failures,
    unhandled_versions,
)
from recall_dagster.results import ModelReport, ScanResult
from recall_dagster.config.load import load
from recall_dagster.scan_markdown import blast_radius_table, detector_counts, findings_table, models_table, scan_report
from recall_dagster.score import score_model

MART = "urn:li:dataset:(urn:li:dataPlatform:postgres,warehouse.marts.fct_transactions,PROD)"
LABELS = "urn:li:dataset:(urn:li:dataPlatform:postgres,warehouse.staging.stg_fraud_labels,PROD)"
MODEL = "urn:li:mlModel:(urn:li:dataPlatform:mlflow,fraud_detector_2,PROD)"
LIVE = Deployment("urn:li:mlModelDeployment:(urn:li:dataPlatform:recall,fraud-api-eu,PROD)", "fraud-api-eu", live=True)


@pytest.fixture(scope="module")
def config() -> ScanConfig:
    return load().scan


def closure() -> ModelClosure:
    feature = Feature("urn:li:mlFeature:(fraud,txn_amount)", "txn_amount", sources=(MART,))
    run = TrainingRun("urn:li:dataProcessInstance:run1", "run1", inputs=(MART, LABELS))
    model = Model(MODEL, "fraud_detector_2", features=(feature.urn,), training_runs=(run.urn,), deployments=(LIVE.urn,))
    return assemble_closure(
        model, production=True, features={feature.urn: feature}, feature_tables={},
        training_runs={run.urn: run}, deployments={LIVE.urn: LIVE},
        datasets={MART: Dataset(MART, "warehouse.marts.fct_transactions"), LABELS: Dataset(LABELS, "labels")},
        production_versions=(), max_depth=5,
    )


def finding(detector: str, severity: Severity, message: str, cause: str | None = MART) -> Finding:
    return Finding(detector, severity, subject=cause or MODEL, message=message, cause=cause)


def report(config: ScanConfig, *findings: Finding) -> ModelReport:
    c = closure()
    return ModelReport(c, findings, score_model(findings, len(c.live_deployments), config.scoring))


def test_the_models_to_rescan_are_those_whose_closure_holds_a_failed_table() -> None:
    assert models_reading([closure()], [MART]) == ("fraud_detector_2",), "a version with no group is its own model"
    assert models_reading([closure()], ["marts.fct_transactions"]) == ("fraud_detector_2",), "trailing parts match"
    assert models_reading([closure()], ["MARTS.FCT_TRANSACTIONS"]) == ("fraud_detector_2",)
    assert models_reading([closure()], ["transactions"]) == (), "a partial table name is not a match"
    assert models_reading([closure()], ["marts.fct_device_features_v2"]) == ()
    assert models_reading([closure()], []) == ()


def test_a_failing_result_is_new_until_handled_whatever_its_stamp() -> None:
    results = [
        AssertionResult("a", MART, 30, "FAILURE"),
        AssertionResult("b", MART, 20, "FAILURE"),
        AssertionResult("c", MART, 40, "SUCCESS"),
        AssertionResult("d", MART, 10, "FAILURE"),
        AssertionResult("e", None, 50, "ERROR"),
    ]
    new, handled = unhandled_failures(results, {"d": 10}, {"FAILURE"})
    assert [r.assertion for r in new] == ["b", "a"], "oldest first; d's result was handled"
    assert handled == {"a": 30, "b": 20, "d": 10}, "the cursor keeps the failing ones alone"
    assert [r.assertion for r in unhandled_failures(results, {}, {"FAILURE", "ERROR"})[0]] == ["d", "b", "a", "e"]
    assert unhandled_failures(results, handled, {"FAILURE"})[0] == (), "each result is new once"

    at_the_edge = [*results, AssertionResult("f", MART, 30, "FAILURE")]  # the millisecond of a, handled already
    late = [*results, AssertionResult("g", MART, 5, "FAILURE")]  # stamped before everything handled
    assert [r.assertion for r in unhandled_failures(at_the_edge, handled, {"FAILURE"})[0]] == ["f"]
    assert [r.assertion for r in unhandled_failures(late, handled, {"FAILURE"})[0]] == ["g"]
    again = [AssertionResult("a", MART, 60, "FAILURE"), AssertionResult("b", MART, 25, "SUCCESS")]
    new, handled = unhandled_failures(again, handled, {"FAILURE"})
    assert [r.assertion for r in new] == ["a"] and handled == {"a": 60}, "a fails again; b passes and leaves"


def test_a_registered_version_is_new_by_its_number_not_its_stamp() -> None:
    registered = [Registration("churn", 1, 100), Registration("churn", 2, 200), Registration("ltv", 1, 150)]
    handled = highest_versions(registered)
    assert handled == {"churn": 2, "ltv": 1} and unhandled_versions(registered, handled) == ()
    at_the_edge, late = Registration("churn", 3, 200), Registration("ltv", 2, 50)
    assert unhandled_versions([*registered, late, at_the_edge], handled) == (at_the_edge, late)
    first = Registration("fraud", 1, 10)  # a model registered after the sensor started
    assert unhandled_versions([*registered, first], handled) == (first,)


def test_markdown_tables_read_well_and_escape_pipes(config) -> None:
    found = (
        finding("failing_assertion", Severity.CRITICAL, "rows | with a pipe"),
        finding("blast_radius", Severity.INFO, "at risk"),
    )
    radius = BlastRadius(MART, (MODEL,), 1, ("failing_assertion",))
    result = ScanResult(0, "datahub.db", (report(config, *found),), (radius,), config)
    assert models_table(result).splitlines()[2] == "| fraud_detector_2 | yes | AT_RISK | 36 | 1 | 1 / 0 / 1 |"
    assert "| failing_assertion | 1 | 0 | 0 | 1 |" in detector_counts(found)
    assert "rows \\| with a pipe" in findings_table(found)
    radius_row = "| warehouse.marts.fct_transactions | failing_assertion | fraud_detector_2 | 1 |"
    assert radius_row in blast_radius_table(result.blast_radius)
    assert blast_radius_table(()) == "No dataset is at risk."
    document = scan_report(result)
    assert document.startswith("# Recall scan at 1970-01-01T00:00:00+00:00")
    assert "### fraud_detector_2 (AT_RISK, 36)" in document and "No model reaches the fail tier CRITICAL." in document
