"""The reactions' choice of models and the Markdown the UI shows: pure functions."""

from __future__ import annotations

import pytest

from recall_dagster.detect import Finding, RecallConfig, Severity
from recall_dagster.detect.blast_radius import BlastRadius
from recall_dagster.estate import Dataset, Deployment, Feature, Model, ModelClosure, TrainingRun, assemble_closure
from recall_dagster.reactions import AssertionResult, models_reading, new_failures
from recall_dagster.results import ModelReport, ScanResult
from recall_dagster.config.load import load
from recall_dagster.scan_markdown import blast_radius_table, detector_counts, findings_table, models_table, scan_report
from recall_dagster.score import score_model

MART = "urn:li:dataset:(urn:li:dataPlatform:postgres,warehouse.marts.fct_transactions,PROD)"
LABELS = "urn:li:dataset:(urn:li:dataPlatform:postgres,warehouse.staging.stg_fraud_labels,PROD)"
MODEL = "urn:li:mlModel:(urn:li:dataPlatform:mlflow,fraud_detector_2,PROD)"
LIVE = Deployment("urn:li:mlModelDeployment:(urn:li:dataPlatform:recall,fraud-api-eu,PROD)", "fraud-api-eu", live=True)


@pytest.fixture(scope="module")
def config() -> RecallConfig:
    return load().scan


def closure() -> ModelClosure:
    feature = Feature("urn:li:mlFeature:(fraud,txn_amount)", "txn_amount", sources=(MART,))
    run = TrainingRun("urn:li:dataProcessInstance:run1", "run1", inputs=(MART, LABELS))
    model = Model(MODEL, "fraud_detector_2", features=(feature.urn,), training_runs=(run.urn,), deployments=(LIVE.urn,))
    return assemble_closure(
        model, production=True, scanned_at_ms=0, features={feature.urn: feature}, feature_tables={},
        training_runs={run.urn: run}, deployments={LIVE.urn: LIVE},
        datasets={MART: Dataset(MART, "warehouse.marts.fct_transactions"), LABELS: Dataset(LABELS, "labels")},
        production_versions=(), max_depth=5,
    )


def finding(detector: str, severity: Severity, message: str, cause: str | None = MART) -> Finding:
    return Finding(detector, severity, subject=cause or MODEL, message=message, cause=cause)


def report(config: RecallConfig, *findings: Finding) -> ModelReport:
    c = closure()
    return ModelReport(c, findings, score_model(findings, len(c.live_deployments), config.scoring))


def test_the_models_to_rescan_are_those_whose_closure_holds_a_failed_table() -> None:
    assert models_reading([closure()], [MART]) == ("fraud_detector_2",), "a version with no group is its own model"
    assert models_reading([closure()], ["marts.fct_transactions"]) == ("fraud_detector_2",), "trailing parts match"
    assert models_reading([closure()], ["MARTS.FCT_TRANSACTIONS"]) == ("fraud_detector_2",)
    assert models_reading([closure()], ["transactions"]) == (), "a partial table name is not a match"
    assert models_reading([closure()], ["marts.fct_device_features_v2"]) == ()
    assert models_reading([closure()], []) == ()


def test_new_failures_are_failing_results_after_the_cursor_oldest_first() -> None:
    results = [
        AssertionResult("a", MART, 30, "FAILURE"),
        AssertionResult("b", MART, 20, "FAILURE"),
        AssertionResult("c", MART, 40, "SUCCESS"),
        AssertionResult("d", MART, 10, "FAILURE"),
        AssertionResult("e", None, 50, "ERROR"),
    ]
    assert [r.assertion for r in new_failures(results, 10, {"FAILURE"})] == ["b", "a"]
    assert [r.assertion for r in new_failures(results, 10, {"FAILURE", "ERROR"})] == ["b", "a", "e"]
    assert new_failures(results, 50, {"FAILURE"}) == ()


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
