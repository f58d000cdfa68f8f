"""profile_drift on hand-built closures: a unit change no schema detector can see, reported once at its origin."""

from __future__ import annotations

from dataclasses import replace

from scan_closures import HOUR, NOW, closure, cols, ds, feature, run, urn
from test_scan_detectors import STATE, subjects, tuned

from recall_dagster.detect import DetectorState, profile_drift
from recall_dagster.estate.views import ColumnEdge, ColumnProfile, Profile

BEFORE, TRAINED, AFTER = NOW - 48 * HOUR, NOW - 24 * HOUR, NOW - HOUR
NORMAL = ColumnProfile(null_fraction=0.0, distinct=900, minimum=1.0, maximum=400.0, mean=52.0, stdev=40.0)
IN_CENTS = replace(NORMAL, minimum=100.0, maximum=40_000.0, mean=5_200.0, stdev=4_000.0)


def profiled(at_ms: int, rows: int = 1_000, **columns: ColumnProfile) -> Profile:
    return Profile(at_ms, rows, columns)


def estate(raw: tuple[Profile, ...], mart: tuple[Profile, ...], trained_ms: int | None = TRAINED, **kwargs):
    """A model whose feature reads mart.amount, derived from raw.amount; raw.note reaches no feature."""
    return closure(
        features=[feature("amount", "mart")],
        runs=[replace(run("train", "mart"), created_ms=trained_ms)],
        datasets=[
            ds("raw", fields=cols(amount="numeric", note="text"), profiles=raw),
            ds("mart", "raw", fields=cols(amount="numeric"), profiles=mart,
               column_lineage=(ColumnEdge((urn("raw"), "amount"), (urn("mart"), "amount")),)),
        ],
        **kwargs,
    )


def test_a_unit_change_is_reported_once_where_it_starts_and_lists_where_it_reached(config):
    c = estate(
        raw=(profiled(AFTER, amount=IN_CENTS, note=NORMAL), profiled(TRAINED - HOUR, amount=NORMAL, note=NORMAL)),
        mart=(profiled(AFTER, amount=IN_CENTS), profiled(TRAINED - HOUR, amount=NORMAL)),
    )
    [found] = profile_drift.detect(c, config, STATE)
    assert (found.subject, found.severity.value) == (urn("raw"), "WARN"), "capped at WARN by default"
    assert "amount: mean 52 -> 5,200 (128.7 standard deviations); range [1, 400] -> [100, 40,000]" in found.message
    assert found.evidence["reached"] == ["db.mart.amount"] and found.evidence["features"] == ["amount"]
    assert found.evidence["reference"] == "the profile when this version trained"
    assert found.evidence["columns"]["amount"]["then"]["mean"] == 52.0
    assert "note" not in found.evidence["columns"], "a column no feature reads is not the model's business"


def test_the_model_is_judged_against_the_data_it_trained_on(config):
    shifted_before_training = estate(
        raw=(profiled(AFTER, amount=IN_CENTS), profiled(BEFORE, amount=IN_CENTS), profiled(BEFORE - HOUR, amount=NORMAL)),
        mart=(),
    )
    assert profile_drift.detect(shifted_before_training, config, STATE) == [], "it trained on cents: nothing moved"
    no_training_time = estate(
        raw=(profiled(AFTER, amount=IN_CENTS), profiled(BEFORE, amount=NORMAL)), mart=(), trained_ms=None
    )
    [found] = profile_drift.detect(no_training_time, config, STATE)
    assert found.evidence["reference"].startswith("the profile before it")


def test_nulls_distinct_values_and_row_counts_have_their_own_bounds(config):
    leaky = replace(NORMAL, null_fraction=0.12, distinct=200)
    c = estate(raw=(profiled(AFTER, 400, amount=leaky), profiled(BEFORE, amount=NORMAL)), mart=())
    [found] = profile_drift.detect(c, config, STATE)
    assert "rows 1,000 -> 400" in found.message
    assert "NULLs 0.0% -> 12.0%" in found.message and "distinct values 900 -> 200" in found.message
    loose = tuned(profile_drift={"row_count_change": 0.9, "null_fraction_increase": 0.5, "distinct_change": 0.9})
    assert profile_drift.detect(c, loose, STATE) == []


def test_without_a_standard_deviation_the_mean_is_judged_relative_to_itself(config):
    bare = ColumnProfile(mean=10.0)
    c = estate(raw=(profiled(AFTER, amount=ColumnProfile(mean=16.0)), profiled(BEFORE, amount=bare)), mart=())
    [found] = profile_drift.detect(c, config, STATE)
    assert "mean 10 -> 16 (60%)" in found.message
    small = estate(raw=(profiled(AFTER, amount=ColumnProfile(mean=14.0)), profiled(BEFORE, amount=bare)), mart=())
    assert profile_drift.detect(small, config, STATE) == []


def test_no_profile_one_profile_or_only_later_profiles_say_nothing(config):
    assert profile_drift.detect(estate(raw=(), mart=()), config, STATE) == []
    assert profile_drift.detect(estate(raw=(profiled(AFTER, amount=IN_CENTS),), mart=()), config, STATE) == []
    replayed = estate(raw=(profiled(AFTER, amount=IN_CENTS), profiled(BEFORE, amount=NORMAL)), mart=())
    assert profile_drift.detect(replayed, config, DetectorState(at_ms=AFTER - HOUR)) == [], (
        "--as-of before the shift was profiled")


def test_the_severity_is_the_teams_to_raise(config):
    c = estate(raw=(profiled(AFTER, amount=IN_CENTS), profiled(BEFORE, amount=NORMAL)), mart=())
    raised = tuned(detectors={"profile_drift": {"severity": {"shift": "CRITICAL"}}})
    assert subjects(profile_drift.detect(c, raised, STATE)) == [(urn("raw"), "CRITICAL")]


def test_a_shift_through_three_tables_is_told_once_at_the_first(config):
    shifted, normal = profiled(AFTER, amount=IN_CENTS), profiled(TRAINED - HOUR, amount=NORMAL)
    c = closure(
        features=[feature("amount", "report")],
        runs=[replace(run("train", "report"), created_ms=TRAINED)],
        datasets=[
            ds("raw", fields=cols(amount="numeric"), profiles=(shifted, normal)),
            ds("mart", "raw", fields=cols(amount="numeric"), profiles=(shifted, normal),
               column_lineage=(ColumnEdge((urn("raw"), "amount"), (urn("mart"), "amount")),)),
            ds("report", "mart", fields=cols(amount="numeric"), profiles=(shifted, normal),
               column_lineage=(ColumnEdge((urn("mart"), "amount"), (urn("report"), "amount")),)),
        ],
    )
    [found] = profile_drift.detect(c, config, STATE)
    assert found.subject == urn("raw") and found.evidence["reached"] == ["db.mart.amount", "db.report.amount"]
