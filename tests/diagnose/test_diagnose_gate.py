"""The metric gate on hand-written metrics: tolerances, direction, one-sided metrics, UNVERIFIED, the primary's loss."""

from __future__ import annotations

import math

import pytest

from recall_dagster.diagnose.config import DiagnoseConfig, Tolerance
from recall_dagster.config.load import load
from recall_dagster.diagnose.metric_gate import metric_gate

CONFIG = load().diagnose


def only(**metrics: Tolerance) -> DiagnoseConfig:
    return CONFIG.model_copy(update={"metrics": metrics,
                                     "primary": [name for name in ("roc_auc", "mae") if name in metrics]})


AUC = Tolerance(higher_is_better=True, tolerance=0.002)
MAE = Tolerance(higher_is_better=False, tolerance=0.05, relative=True)


def test_an_absolute_tolerance_allows_a_drop_up_to_it_and_no_further() -> None:
    config = only(roc_auc=AUC)
    assert metric_gate({"roc_auc": 0.799}, {"roc_auc": 0.8}, config).verdict == "PASS"
    assert metric_gate({"roc_auc": 0.798}, {"roc_auc": 0.8}, config).verdict == "PASS", "exactly the tolerance"
    outcome = metric_gate({"roc_auc": 0.797}, {"roc_auc": 0.8}, config)
    assert outcome.verdict == "REGRESSION"
    [row] = outcome.rows
    assert row.regressed and row.delta == pytest.approx(-0.003)
    assert "roc_auc" in outcome.reason


def test_a_relative_tolerance_scales_with_the_baseline() -> None:
    config = only(mae=MAE)
    assert metric_gate({"mae": 2.09}, {"mae": 2.0}, config).verdict == "PASS"  # allowed 0.1
    assert metric_gate({"mae": 2.11}, {"mae": 2.0}, config).verdict == "REGRESSION"
    assert metric_gate({"mae": 4.11}, {"mae": 4.0}, config).verdict == "PASS", "the same rise on a bigger error"
    absolute = only(mae=MAE.model_copy(update={"relative": False}))
    assert metric_gate({"mae": 2.09}, {"mae": 2.0}, absolute).verdict == "REGRESSION", "0.09 > 0.05 absolute"


def test_direction_decides_what_worse_means() -> None:
    config = only(roc_auc=AUC, mae=MAE)
    better = metric_gate({"roc_auc": 0.9, "mae": 1.0}, {"roc_auc": 0.8, "mae": 2.0}, config)
    assert better.verdict == "PASS" and not any(row.regressed for row in better.rows)
    assert better.loss is not None and better.loss < 0, "an improvement is a negative loss"
    worse = metric_gate({"roc_auc": 0.9, "mae": 3.0}, {"roc_auc": 0.8, "mae": 2.0}, config)
    assert worse.verdict == "REGRESSION"
    assert [row.name for row in worse.rows if row.regressed] == ["mae"]
    assert [row.delta for row in worse.rows] == [pytest.approx(0.1), pytest.approx(1.0)]


def test_a_metric_only_one_run_logged_is_shown_but_never_regresses() -> None:
    config = only(roc_auc=AUC, mae=MAE)
    outcome = metric_gate({"roc_auc": 0.8, "mae": 100.0}, {"roc_auc": 0.8}, config)
    assert outcome.verdict == "PASS"
    mae = next(row for row in outcome.rows if row.name == "mae")
    assert (mae.baseline, mae.candidate, mae.delta, mae.regressed) == (None, 100.0, None, False)
    assert "baseline did not log it" in mae.note


def test_nan_counts_as_not_logged() -> None:
    config = only(roc_auc=AUC, mae=MAE)
    outcome = metric_gate({"roc_auc": math.nan, "mae": 2.0}, {"roc_auc": 0.9, "mae": 2.0}, config)
    assert outcome.verdict == "PASS" and outcome.primary == "mae"
    auc = outcome.rows[0]
    assert auc.candidate is None and not auc.regressed and "nan" in auc.note


def test_nothing_compared_is_unverified_and_says_what_was_missing() -> None:
    outcome = metric_gate({"roc_auc": 0.5, "accuracy": 0.1}, {"mae": math.nan, "accuracy": 0.9}, CONFIG)
    assert outcome.verdict == "UNVERIFIED"
    assert (outcome.primary, outcome.loss) == (None, None)
    for name in ("roc_auc", "mae", "average_precision", "rmse", "r2"):
        assert name in outcome.reason
    assert "accuracy" not in outcome.reason, "a metric diagnose.metrics does not name is not gated"
    assert metric_gate({}, {}, CONFIG).verdict == "UNVERIFIED"


def test_the_primary_is_the_biggest_drop_and_its_loss_is_a_share_of_skill() -> None:
    both = metric_gate({"roc_auc": 0.7, "mae": 2.5}, {"roc_auc": 0.8, "mae": 2.0}, CONFIG)
    assert both.primary == "roc_auc" and both.loss == pytest.approx(0.1 / 0.3), "skill above chance 0.5"
    no_auc = metric_gate({"mae": 2.5}, {"roc_auc": 0.8, "mae": 2.0}, CONFIG)
    assert no_auc.primary == "mae" and no_auc.loss == pytest.approx(0.25), "relative to the error's size"
    bigger = metric_gate({"roc_auc": 0.79, "mae": 3.0}, {"roc_auc": 0.8, "mae": 2.0}, CONFIG)
    assert bigger.primary == "mae", "half its size lost beats a thirtieth of AUC's skill, whatever the order"
    tie = ({"roc_auc": 0.65, "mae": 3.0}, {"roc_auc": 0.8, "mae": 2.0})  # both lose half
    assert metric_gate(*tie, CONFIG).primary == "roc_auc"
    assert metric_gate(*tie, CONFIG.model_copy(update={"primary": ["mae", "roc_auc"]})).primary == "mae", "the order breaks ties"
    at_chance = metric_gate({"roc_auc": 0.45}, {"roc_auc": 0.5}, CONFIG)
    assert at_chance.loss == pytest.approx(0.05), "no skill to share: the drop itself"
    only_r2 = metric_gate({"r2": 0.5}, {"r2": 0.6}, CONFIG)
    assert only_r2.verdict == "REGRESSION" and only_r2.primary == "r2", "the drop the gate saw, though not listed"
    auc_held = metric_gate({"roc_auc": 0.799, "average_precision": 0.5}, {"roc_auc": 0.8, "average_precision": 0.6},
                           CONFIG)
    assert auc_held.primary == "average_precision", "a primary that held is not the drop to explain"
    assert auc_held.loss == pytest.approx(0.1 / 0.6)
    nothing_regressed = metric_gate({"roc_auc": 0.81, "r2": 0.6}, {"roc_auc": 0.8, "r2": 0.6}, CONFIG)
    assert nothing_regressed.primary == "roc_auc"


def test_the_outcome_serialises_every_row() -> None:
    outcome = metric_gate({"roc_auc": 0.7, "r2": 0.1}, {"roc_auc": 0.8}, CONFIG)
    out = outcome.contract().as_json()
    assert set(out) == {"verdict", "metrics", "primary", "loss", "reason"}
    assert out["verdict"] == "REGRESSION" and [m["name"] for m in out["metrics"]] == ["roc_auc", "r2"]
    assert out["metrics"][0]["tolerance"] == {"higher_is_better": True, "tolerance": 0.002, "relative": False}
    assert out["metrics"][1]["delta"] is None and out["metrics"][1]["baseline"] is None
