"""``--as-of`` is honoured by what the scan reads of assertions: a test that first failed after the instant is not
reported as failing at it, and one that failed before and has since passed is."""

from __future__ import annotations

from scan_closures import HOUR, NOW, closure, ds, feature

from recall_dagster.detect import DetectorState, failing_assertion
from recall_dagster.estate.views import Assertion, AssertionResult


def price_test(*runs: tuple[int, str]) -> Assertion:
    history = tuple(AssertionResult(at, result, 7 if result == "FAILURE" else None) for at, result in runs)
    latest = history[0]
    return Assertion("urn:li:assertion:price", "not_null_price", "price", latest.result, latest.failed_rows,
                     ran_at_ms=latest.at_ms, since_ms=latest.at_ms, history=history)


def failing_at(assertion: Assertion, scanned_at_ms: int, config) -> list[str]:
    mart = ds("mart", assertions=(assertion,))
    found = failing_assertion.detect(closure(features=[feature("price", "mart")], datasets=[mart]), config,
                                     DetectorState(at_ms=scanned_at_ms))
    return [f.evidence["result"] for f in found]


def test_a_test_that_first_failed_after_the_instant_is_not_failing_at_it(config) -> None:
    test = price_test((NOW - HOUR, "FAILURE"), (NOW - 24 * HOUR, "SUCCESS"))
    assert failing_at(test, NOW, config) == ["FAILURE"]
    assert failing_at(test, NOW - 12 * HOUR, config) == [], "as of yesterday it passed"
    assert failing_at(test, NOW - 48 * HOUR, config) == [], "before any run nothing is known"


def test_a_failure_since_repaired_is_failing_as_of_its_time(config) -> None:
    test = price_test((NOW - HOUR, "SUCCESS"), (NOW - 10 * HOUR, "FAILURE"), (NOW - 30 * HOUR, "FAILURE"))
    assert failing_at(test, NOW, config) == []
    assert failing_at(test, NOW - 5 * HOUR, config) == ["FAILURE"]
    [again] = failing_assertion.detect(
        closure(features=[feature("price", "mart")], datasets=[ds("mart", assertions=(test,))]), config,
        DetectorState(at_ms=NOW - 5 * HOUR))
    assert again.evidence["since_ms"] == NOW - 30 * HOUR and again.evidence["failed_rows"] == 7
