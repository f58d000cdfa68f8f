"""One pipeline: first pass, then the measured replay, then the blast radius from the measured severities.

The blast radius used to be spread before the findings were replayed on their
model, so a schema drift a replay measured harmless (PASS, lowered to INFO) kept
its table "at risk" and its model a ``blast_radius`` finding. The replay needs
MLflow; here it is a function setting a finding's severity, standing for the
step the scan, the Dagster ``impact_tests`` asset and the retrain gate all call.
"""

from __future__ import annotations

from dataclasses import replace

from scan_closures import NOW, closure, ds, feature, urn

from recall_dagster.acks.model import Acknowledgement, fingerprint
from recall_dagster.detect import Detection, Severity
from recall_dagster.detect.finding import finding
from recall_dagster.detect.catalogue import Found, second_pass
from recall_dagster.impact.measured import measured_detection
from recall_dagster.results import score_models

MODEL = closure(features=[feature("f", "orders")], datasets=[ds("orders")])
DRIFT = "training_source_schema_drift"


def drifted(config) -> Detection:
    """The scan's detection after its first and second passes: one CRITICAL retype of the table the model reads."""
    drift = finding(MODEL, DRIFT, Severity.CRITICAL, urn("orders"), "db.orders.amount retyped", cause=urn("orders"))
    return second_pass([MODEL], {MODEL.urn: [drift]}, config)


def replayed(verdict: Severity):
    """A measured replay whose verdict sets every drift finding's severity."""

    def measure(graph, closures, found: Found) -> Found:
        assert all(f.detector != "blast_radius" for fs in found.values() for f in fs), "it replays the first pass"
        return {u: [replace(f, severity=verdict) if f.detector == DRIFT else f for f in fs] for u, fs in found.items()}

    return measure


def detectors(detection: Detection) -> list[tuple[str, str]]:
    return [(f.detector, f.severity.value) for f in detection.findings[MODEL.urn]]


def test_a_drift_measured_harmless_endangers_no_one(config):
    before = drifted(config)
    assert ("blast_radius", "INFO") in detectors(before) and [b.dataset for b in before.blast_radius] == [urn("orders")]
    after = measured_detection(None, [MODEL], before, config, replayed(Severity.INFO), at_ms=NOW)
    assert detectors(after) == [(DRIFT, "INFO")], "lowered below blast_radius.min_severity, the table is not at risk"
    assert after.blast_radius == ()
    (report,) = score_models([MODEL], after, config, at_ms=NOW)
    (unmeasured,) = score_models([MODEL], before, config, at_ms=NOW)
    assert report.score.value < unmeasured.score.value


def test_a_drift_measured_harmful_keeps_its_radius_and_an_unmeasured_detection_is_kept_whole(config):
    before = drifted(config)
    kept = measured_detection(None, [MODEL], before, config, lambda g, c, found: found, at_ms=NOW)
    assert kept is before, "nothing replayed: the detection stands as the first pass left it"
    raised = measured_detection(None, [MODEL], before, config, replayed(Severity.CRITICAL), at_ms=NOW)
    assert [b.dataset for b in raised.blast_radius] == [urn("orders")]


def test_the_spread_after_measuring_honours_acknowledgements(config):
    before = drifted(config)
    (drift,) = [f for f in before.findings[MODEL.urn] if f.detector == DRIFT]
    ack = Acknowledgement.make(DRIFT, urn("orders"), None, [fingerprint(drift)], "known", "ana", NOW - 1, NOW + 1)
    after = measured_detection(None, [MODEL], before, config, replayed(Severity.CRITICAL), acks=(ack,), at_ms=NOW)
    assert after.blast_radius == (), "an accepted risk endangers no one, measured or not"
