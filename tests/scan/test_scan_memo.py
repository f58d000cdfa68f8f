"""Per-dataset work is done once per pass, and never lends one view's verdict to another view of the same URN."""

from __future__ import annotations

from dataclasses import replace

from scan_closures import HOUR, NOW, closure, cols, ds, feature, urn

from recall_dagster.detect import DetectorState, training_source_schema_drift, upstream_staleness
from recall_dagster.estate import Dataset


def test_a_dataset_a_dozen_closures_hold_is_judged_once_and_reported_in_each(config, monkeypatch) -> None:
    judged = []
    freshness_at = Dataset.freshness_at

    def counted(self: Dataset, instant_ms: int):
        judged.append(self.urn)
        return freshness_at(self, instant_ms)

    monkeypatch.setattr(Dataset, "freshness_at", counted)
    raw = ds("raw", last_modified_ms=NOW - 200 * HOUR)
    closures = [closure(features=[feature(f"f{i}", "raw")], datasets=[raw]) for i in range(12)]
    state = DetectorState(at_ms=NOW)
    found = [upstream_staleness.detect(c, config, state) for c in closures]
    assert [[f.subject for f in fs] for fs in found] == [[urn("raw")]] * 12
    assert judged == [urn("raw")]
    later = upstream_staleness.detect(closure(features=[feature("f", "raw")], datasets=[raw]), config,
                                      replace(state, at_ms=NOW + HOUR))
    assert [f.evidence["age_hours"] for f in later] == [201.0], "another instant is judged again"


def test_two_views_of_one_dataset_each_get_their_own_verdict(config) -> None:
    state = DetectorState(at_ms=NOW, schema_baselines={urn("mart"): {"amount": "NUMBER"}})
    stale = ds("mart", last_modified_ms=NOW - 200 * HOUR, fields=cols(amount="STRING"))
    fresh = ds("mart", last_modified_ms=NOW - HOUR, fields=cols(amount="NUMBER"))
    old, new = (closure(features=[feature("amount", "mart")], datasets=[view]) for view in (stale, fresh))
    assert [f.subject for f in upstream_staleness.detect(old, config, state)] == [urn("mart")]
    assert upstream_staleness.detect(new, config, state) == []
    [drift] = training_source_schema_drift.detect(old, config, state)
    assert drift.evidence["changes"] == [{"column": "amount", "change": "retyped", "before": "NUMBER", "after": "STRING"}]
    assert training_source_schema_drift.detect(new, config, state) == []
