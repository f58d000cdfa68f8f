"""Ranked hypotheses on hand-built clues: each signal, counter-evidence, order, the abstain rule, transparency."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from recall_dagster.config.load import load
from recall_dagster.diagnose.facts import Clue, Facts, Relevance, RunFacts
from recall_dagster.diagnose.hypotheses import Hypothesis, Signal, decide, rank

CONFIG = load().diagnose.hypotheses
FEATURES = ("amount", "country", "age", "tenure")
# The baseline trained 0..1000 ms, the candidate started at 11000 ms: the interval is [1000, 11000].
BASELINE = RunFacts("1", "run-1", start_ms=0, end_ms=1000, features=FEATURES)
CANDIDATE = RunFacts("2", "run-2", start_ms=11_000, end_ms=12_000, features=FEATURES)


def clue(kind: str = "assertion_failed", subject: str = "orders", relevance: Relevance = "input", **kw: Any) -> Clue:
    return Clue(kind, subject, f"{kind} seen on {subject}", relevance, **kw)


def facts(*clues: Clue, baseline: RunFacts = BASELINE, candidate: RunFacts = CANDIDATE, total: int = 0) -> Facts:
    return Facts("churn", candidate, baseline, clues, total_features=total)


def hypothesis(kind: str, *clues: Clue, observed: float | None = 0.1, **kw: Any) -> Hypothesis:
    return next(h for h in rank(facts(*clues, **kw), observed, CONFIG) if h.kind == kind)


def signal(h: Hypothesis, name: str) -> Signal:
    return next(s for s in h.signals if s.name == name)


def value(name: str, *clues: Clue, kind: str = "upstream_data_quality", **kw: Any) -> float:
    return signal(hypothesis(kind, *clues, **kw), name).value


@pytest.mark.parametrize(("at_ms", "expected"), [
    (1000, 0.5),  # the baseline's end
    (6000, 0.75),  # halfway
    (11_000, 1.0),  # the candidate's start
    (500, 0.2),  # before the interval
    (11_001, 0.0),  # after the candidate started
])
def test_temporal_scales_across_the_interval(at_ms: int, expected: float) -> None:
    assert value("temporal", clue(at_ms=at_ms)) == pytest.approx(expected)


def test_temporal_without_a_time_trusts_only_differences_between_the_runs() -> None:
    assert value("temporal", clue("schema_changed"), kind="schema_change") == 1.0
    assert value("temporal", clue("param_changed"), kind="parameter_change") == 1.0
    assert value("temporal", clue("input_stale"), kind="stale_input") == 0.5
    assert value("temporal", clue("assertion_failed")) == 0.5


def test_temporal_with_missing_run_times_is_unknown_and_falls_back_to_the_baseline_start() -> None:
    no_times = replace(CANDIDATE, start_ms=None)
    assert value("temporal", clue(at_ms=6000), candidate=no_times) == 0.5
    started_only = replace(BASELINE, end_ms=None)  # the interval becomes [0, 11000]
    assert value("temporal", clue(at_ms=5500), baseline=started_only) == pytest.approx(0.75)


def test_temporal_takes_the_best_clue_and_names_it() -> None:
    h = hypothesis("upstream_data_quality", clue(subject="early", at_ms=500), clue(subject="late", at_ms=11_000))
    assert signal(h, "temporal").value == 1.0 and "late" in signal(h, "temporal").why


@pytest.mark.parametrize(("relevance", "expected"),
                         [("feature", 1.0), ("input", 0.6), ("upstream", 0.3), ("none", 0.0)])
def test_lineage_levels(relevance: Relevance, expected: float) -> None:
    assert value("lineage", clue(relevance=relevance)) == expected


def test_lineage_is_the_closest_clue() -> None:
    assert value("lineage", clue(relevance="upstream"), clue(subject="x", relevance="feature")) == 1.0


def test_fields_is_the_share_of_the_models_features_the_clues_touch() -> None:
    a, b = clue(fields=("amount", "not_a_feature")), clue(subject="x", fields=("amount", "age"))
    assert value("fields", a) == 0.25
    assert value("fields", a, b) == 0.5, "the union, counted once"
    assert value("fields", a, b, total=10) == 0.2, "total_features, when known, is the denominator"
    assert value("fields", a, b, total=1) == 1.0, "capped"
    bare = replace(CANDIDATE, features=())
    assert value("fields", a, candidate=bare) == 0.0


def test_size_compares_the_replayed_loss_with_the_observed_one() -> None:
    assert value("size", clue(measured_loss=0.05), observed=0.1) == pytest.approx(0.5)
    assert value("size", clue(measured_loss=0.3), observed=0.1) == 1.0, "capped"
    assert value("size", clue(measured_loss=0.02), clue(subject="x", measured_loss=0.08), observed=0.1) \
        == pytest.approx(0.8), "the largest replay"
    assert value("size", clue(), observed=0.1) == 0.5, "nothing measured"
    for observed in (None, 0.0, -0.2):
        assert value("size", clue(measured_loss=0.05), observed=observed) == 0.5, "no drop to compare with"


def test_corroboration_counts_distinct_clues() -> None:
    one, two, three, four = (clue(subject=s) for s in ("a", "b", "c", "d"))
    assert value("corroboration", one) == 0.0
    assert value("corroboration", one, one) == 0.0, "a repeated clue is one clue"
    assert value("corroboration", one, two) == 0.5
    assert value("corroboration", one, two, three) == 1.0
    assert value("corroboration", one, two, three, four) == 1.0


def test_every_clue_kind_supports_its_hypothesis() -> None:
    expected = {
        "assertion_failed": "upstream_data_quality", "contaminated": "upstream_data_quality",
        "rows_changed": "upstream_data_quality", "schema_changed": "schema_change",
        "transform_changed": "feature_transformation", "code_changed": "feature_transformation",
        "input_stale": "stale_input", "serving_skew": "training_serving_skew", "param_changed": "parameter_change",
        "features_changed": "parameter_change", "label_shift": "label_change",
    }
    for kind, hypothesis_kind in expected.items():
        listed = [h.kind for h in rank(facts(clue(kind)), 0.1, CONFIG)]
        assert sorted(listed) == sorted([hypothesis_kind, "no_data_cause"]), kind


def test_counter_evidence_lowers_the_score_and_never_supports() -> None:
    failed = clue(at_ms=6000, relevance="feature", fields=("amount",))
    recovered = clue("assertion_recovered", at_ms=9000, against=True)
    alone = hypothesis("upstream_data_quality", failed)
    countered = hypothesis("upstream_data_quality", failed, recovered)
    assert countered.counter == (recovered,) and countered.evidence == (failed,)
    assert countered.score == pytest.approx(alone.score - CONFIG.counter_penalty)
    against_schema = clue("schema_changed", against=True)
    ranked = rank(facts(against_schema), 0.1, CONFIG)
    assert [h.kind for h in ranked] == ["no_data_cause"], "evidence against a cause is no reason to list it"
    schema = hypothesis("schema_change", clue("schema_changed", subject="t.a"), against_schema)
    assert schema.counter == (against_schema,) and len(schema.evidence) == 1


def test_ranking_is_best_first_with_ties_in_catalogue_order() -> None:
    strong = clue("schema_changed", relevance="feature", fields=("amount", "age"))
    weak = clue("input_stale", relevance="upstream", at_ms=500)
    assert [h.kind for h in rank(facts(weak, strong), 0.1, CONFIG)][0] == "schema_change"
    twins = [clue(kind, at_ms=6000, relevance="input") for kind in ("param_changed", "transform_changed")]
    forward = rank(facts(*twins), 0.1, CONFIG)
    backward = rank(facts(*reversed(twins)), 0.1, CONFIG)
    assert forward[0].score == forward[1].score
    assert [h.kind for h in forward] == [h.kind for h in backward] == [
        "feature_transformation", "parameter_change", "no_data_cause"]


def test_no_clue_leaves_only_no_data_cause() -> None:
    [only] = rank(facts(), 0.1, CONFIG)
    assert only.kind == "no_data_cause" and only.score == 0.5
    assert [(s.name, s.weight, s.value) for s in only.signals] == [("absence", 1.0, 0.5)]
    ranked = rank(facts(clue("schema_changed", relevance="feature")), 0.1, CONFIG)
    best, absence = ranked[0], next(h for h in ranked if h.kind == "no_data_cause")
    assert absence.score == pytest.approx(0.5 * (1 - best.score))


def hyp(kind: str, score: float) -> Hypothesis:
    return Hypothesis(kind, score, (), (), ())


def test_decide_abstains_below_the_floor_or_within_the_margin() -> None:
    low, reason = decide((hyp("schema_change", 0.3), hyp("no_data_cause", 0.1)), CONFIG)
    assert low == "INCONCLUSIVE" and "floor" in reason
    close, reason = decide((hyp("schema_change", 0.6), hyp("stale_input", 0.55)), CONFIG)
    assert close == "INCONCLUSIVE"
    assert "schema_change" in reason and "stale_input" in reason and "0.600" in reason and "0.550" in reason
    clear, reason = decide((hyp("schema_change", 0.6), hyp("stale_input", 0.4)), CONFIG)
    assert clear == "REGRESSION" and "schema_change" in reason
    assert decide((hyp("schema_change", 0.6), hyp("stale_input", 0.5)), CONFIG)[0] == "REGRESSION", "exactly the margin"
    assert decide((hyp("schema_change", 0.6), hyp("stale_input", 0.4)), CONFIG.model_copy(update={"margin": 0.3}))[0] \
        == "INCONCLUSIVE"
    assert decide((hyp("schema_change", 0.35),), CONFIG)[0] == "REGRESSION", "exactly the floor"


def test_every_score_is_the_clipped_weighted_sum_its_signals_show() -> None:
    clues = (
        clue("assertion_failed", at_ms=9000, relevance="feature", fields=("amount",), measured_loss=0.04),
        clue("rows_changed", subject="customers", fields=("age",)),
        clue("contaminated", subject="run-2", relevance="input"),
        clue("assertion_recovered", at_ms=10_000, against=True),
        clue("schema_changed", subject="orders.country", relevance="feature", fields=("country",)),
        clue("input_stale", subject="fx_rates", relevance="upstream", at_ms=200),
        clue("input_stale", subject="fx_rates", relevance="upstream", against=True),
        clue("code_changed", subject="train.py", relevance="none"),
        clue("label_shift", subject="labels", measured_loss=0.5),
    )
    ranked = rank(facts(*clues), 0.08, CONFIG)
    assert len(ranked) == 6
    for h in ranked:
        assert all(0.0 <= s.value <= 1.0 and s.why for s in h.signals), h.kind
        if h.kind != "no_data_cause":
            assert {s.name: s.weight for s in h.signals} == dict(CONFIG.weights)
        raw = sum(s.weight * s.value for s in h.signals) - CONFIG.counter_penalty * len(h.counter)
        assert h.score == pytest.approx(min(1.0, max(0.0, raw))), h.kind
        assert h.contract().as_json()["score"] == round(h.score, 3)
    assert [h.score for h in ranked] == sorted((h.score for h in ranked), reverse=True)
    stale = next(h for h in ranked if h.kind == "stale_input")
    assert stale.score == 0.0, "clipped at zero by the evidence against it"


def test_a_hypothesis_serialises_its_signals_evidence_and_counter() -> None:
    recovered = clue("assertion_recovered", against=True)
    out = hypothesis("upstream_data_quality", clue(data={"rows": 3}), recovered).contract().as_json()
    assert set(out) == {"kind", "score", "signals", "evidence", "counter"}
    assert [s["name"] for s in out["signals"]] == ["temporal", "lineage", "fields", "size", "corroboration"]
    assert set(out["signals"][0]) == {"name", "value", "weight", "why"}
    assert out["evidence"][0]["data"] == {"rows": 3} and out["counter"][0]["kind"] == "assertion_recovered"


def test_a_profile_shift_on_a_feature_column_argues_for_bad_upstream_data() -> None:
    shifted = clue("profile_shifted", "warehouse.raw.transactions", "feature", at_ms=9_000, fields=("amount",))
    ranked = rank(facts(shifted, total=4), 0.1, CONFIG)
    assert ranked[0].kind == "upstream_data_quality" and ranked[0].evidence == (shifted,)
    corroborated = hypothesis("upstream_data_quality", shifted, clue(at_ms=8_000, fields=("amount",)), total=4)
    assert corroborated.score > ranked[0].score, "a failing test and a moved profile agree"
