"""One pipeline: first pass, then the measured replay, then the blast radius from the measured severities.

The blast radius used to be spread before the findings were replayed on their
model, so a schema drift a replay measured harmless (PASS, lowered to INFO) kept
its table "at risk" and its model a ``blast_radius`` finding. The replay needs
MLflow; here it is a function setting a finding's severity, standing for the
measure stage every entry point runs (:class:`~recall_dagster.scan.Pipeline`).
"""

from __future__ import annotations

from dataclasses import replace

from scan_closures import NOW, closure, ds, feature, urn

from recall_dagster.acks.model import Acknowledgement, fingerprint
from recall_dagster.acks.trust import AckBook
from recall_dagster.kept.baselines import MemoryStateStore
from recall_dagster.detect import Detection, Severity
from recall_dagster.detect.catalogue import Found
from recall_dagster.detect.finding import finding
from recall_dagster.scan import Measure, Pipeline, Read

MODEL = closure(features=[feature("f", "orders")], datasets=[ds("orders")])
DRIFT = "training_source_schema_drift"
FOUND = {MODEL.urn: [finding(MODEL, DRIFT, Severity.CRITICAL, urn("orders"), "db.orders.amount retyped",
                             cause=urn("orders"))]}  # one CRITICAL retype of the table the model reads


def spread(config, measure: Measure | None, acks: AckBook = AckBook()) -> tuple[Detection, Read, Pipeline]:
    """The measure and spread stages over the first pass ``FOUND``, as the scan runs them."""
    pipeline = Pipeline(config, MemoryStateStore(), measure=measure)
    read = Read(NOW, "graph", (MODEL,), whole_estate=True, acks=acks)
    return pipeline.spread(read, pipeline.measured(None, read, FOUND)), read, pipeline


def replayed(verdict: Severity) -> Measure:
    """A measured replay whose verdict sets every drift finding's severity."""

    def measure(graph, closures, found: Found) -> Found:  # noqa: ANN001 - no graph is read
        assert all(f.detector != "blast_radius" for fs in found.values() for f in fs), "it replays the first pass"
        return {u: [replace(f, severity=verdict) if f.detector == DRIFT else f for f in fs] for u, fs in found.items()}

    return measure


def detectors(detection: Detection) -> list[tuple[str, str]]:
    return [(f.detector, f.severity.value) for f in detection.findings[MODEL.urn]]


def test_a_drift_measured_harmless_endangers_no_one(config):
    before, read, unmeasured = spread(config, None)
    assert ("blast_radius", "INFO") in detectors(before) and [b.dataset for b in before.blast_radius] == [urn("orders")]
    after, _, measured = spread(config, replayed(Severity.INFO))
    assert detectors(after) == [(DRIFT, "INFO")], "lowered below blast_radius.min_severity, the table is not at risk"
    assert after.blast_radius == ()
    (report,) = measured.score(read, after).models
    (unmeasured_report,) = unmeasured.score(read, before).models
    assert report.score.value < unmeasured_report.score.value


def test_a_drift_measured_harmful_keeps_its_radius(config):
    raised, _, _ = spread(config, replayed(Severity.CRITICAL))
    assert [b.dataset for b in raised.blast_radius] == [urn("orders")]


def test_the_spread_after_measuring_honours_acknowledgements(config):
    (drift,) = FOUND[MODEL.urn]
    ack = Acknowledgement.make(DRIFT, urn("orders"), None, [fingerprint(drift)], "known", "ana", NOW - 1, NOW + 1)
    after, _, _ = spread(config, replayed(Severity.CRITICAL), AckBook(honoured=(ack,)))
    assert after.blast_radius == (), "an accepted risk endangers no one, measured or not"
