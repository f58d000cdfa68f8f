"""Baseline against mutated inference: metrics agree with sklearn, the paired bootstrap, flips, failures."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import mean_absolute_error, roc_auc_score

from recall_dagster.impact.measure import Inference, _auc, infer, measure, metric_of
from recall_dagster.impact.mutation_spec import parse_mutation
from recall_dagster.impact.mutations import apply

N = 400


class Logistic:
    """A classifier whose positive-class probability is a logistic of column ``x``; raises on NaN like many models."""

    task = "classification"

    def __init__(self) -> None:
        self.calls = 0

    def predict(self, frame: pd.DataFrame):
        self.calls += 1
        x = frame["x"].to_numpy(dtype="float64")
        if np.isnan(x).any():
            raise ValueError("Input contains NaN.\nsecond line the report does not need")
        p = 1.0 / (1.0 + np.exp(-2.0 * x))
        return p, (p >= 0.5).astype(int)


class Linear:
    task = "regression"

    def predict(self, frame: pd.DataFrame):
        return 3.0 * frame["x"].to_numpy(dtype="float64") + 1.0, None


class Short:
    task = "regression"

    def predict(self, frame: pd.DataFrame):
        return np.zeros(max(0, len(frame) - 1)), None


@pytest.fixture
def data() -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(1)
    x = rng.normal(size=N)
    labels = (rng.random(N) < 1.0 / (1.0 + np.exp(-2.5 * x))).astype("float64")
    return pd.DataFrame({"x": x, "noise": rng.normal(size=N)}), labels


def run(task, base: Inference, mutated: Inference, labels, seed=7, replicates=200, tolerance=0.1):
    return measure(
        task, base, mutated, labels, replicates=replicates, confidence=0.95, seed=seed, flip_tolerance=tolerance
    )


def inference(scores, classes=None, failures=0) -> Inference:
    return Inference(scores=np.asarray(scores, dtype="float64"), classes=classes, failures=failures, error=None)


# --- the metrics --------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("decimals", [None, 1, 0])  # continuous scores, many ties, almost all tied
def test_auc_agrees_with_sklearn_including_ties(seed, decimals):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 300))
    labels = (rng.random(n) < 0.3).astype("float64")
    labels[:2] = [0.0, 1.0]
    scores = rng.normal(size=n) + labels * rng.uniform(0, 1.5)
    if decimals is not None:
        scores = np.round(scores, decimals)
    expected = roc_auc_score(labels, scores)
    assert metric_of("classification", scores, labels) == pytest.approx(expected, abs=1e-12)
    assert _auc(scores, labels, np.ones((1, n)))[0] == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_weighted_auc_agrees_with_sklearn_sample_weight_row_by_row(seed):
    rng = np.random.default_rng(100 + seed)
    n = 150
    labels = (rng.random(n) < 0.5).astype("float64")
    scores = np.round(rng.normal(size=n) + labels, 1)
    weights = rng.poisson(1.0, size=(5, n)).astype("float64")
    got = _auc(scores, labels, weights)
    assert got.shape == (5,)
    for row, value in zip(weights, got):
        assert value == pytest.approx(roc_auc_score(labels, scores, sample_weight=row), abs=1e-12)


def test_auc_of_perfect_inverted_and_constant_scores():
    labels = np.array([0, 0, 1, 1], dtype="float64")
    assert metric_of("classification", np.array([0.1, 0.2, 0.8, 0.9]), labels) == 1.0
    assert metric_of("classification", np.array([0.9, 0.8, 0.2, 0.1]), labels) == 0.0
    assert metric_of("classification", np.full(4, 0.5), labels) == 0.5


@pytest.mark.parametrize("seed", range(4))
def test_mae_agrees_with_sklearn(seed):
    rng = np.random.default_rng(seed)
    y, pred = rng.normal(size=90), rng.normal(size=90)
    assert metric_of("regression", pred, y) == pytest.approx(mean_absolute_error(y, pred), abs=1e-12)


# --- infer --------------------------------------------------------------------------------------


def test_infer_scores_every_row_in_batches(data):
    frame, _ = data
    model = Logistic()
    result = infer(model, frame, batch_rows=64)
    assert model.calls == int(np.ceil(N / 64))
    assert result.failures == 0 and result.error is None
    assert result.scored.all()
    np.testing.assert_allclose(result.scores, 1.0 / (1.0 + np.exp(-2.0 * frame["x"].to_numpy())))
    assert list(result.classes) == list((result.scores >= 0.5).astype(int))


def test_infer_counts_exactly_the_rows_of_batches_that_raise(data):
    frame, _ = data
    frame = frame.copy()
    frame.loc[[15, 47, 48], "x"] = np.nan  # batches [10, 20) and [40, 50) of ten rows
    result = infer(Logistic(), frame, batch_rows=10)
    assert result.failures == 20
    failed = np.zeros(N, dtype=bool)
    failed[10:20] = failed[40:50] = True
    assert np.array_equal(~result.scored, failed)
    assert result.error == "ValueError: Input contains NaN."
    assert all(c is None for c in result.classes[failed])
    assert all(c is not None for c in result.classes[~failed])


def test_infer_counts_a_wrong_number_of_scores_as_a_failure():
    result = infer(Short(), pd.DataFrame({"x": np.arange(25.0)}), batch_rows=10)
    assert result.failures == 25
    assert not result.scored.any()
    assert result.error.startswith("ValueError: the model returned 9 scores for 10 rows")


def test_infer_after_a_null_mutation_fails_the_touched_batches(data):
    frame, _ = data
    mutated = apply(parse_mutation("null_fraction:0.01"), frame, ["x"], 3)  # 4 rows NULL
    bad_batches = {i // 50 for i in np.flatnonzero(mutated["x"].isna().to_numpy())}
    result = infer(Logistic(), mutated, batch_rows=50)
    assert result.failures == 50 * len(bad_batches)


# --- measure ------------------------------------------------------------------------------------


def test_identical_passes_measure_no_change(data):
    frame, labels = data
    base = infer(Logistic(), frame, 100)
    m = run("classification", base, base, labels)
    assert m.metric == "roc_auc"
    assert m.baseline == pytest.approx(roc_auc_score(labels, base.scores))
    assert m.delta == 0.0 and m.loss == 0.0
    assert m.ci == (0.0, 0.0)
    assert m.significant is False
    assert m.flip_rate == 0.0 and m.mean_abs_shift == 0.0
    assert m.failures == 0 and m.rows == N


def test_identical_regression_passes_measure_no_change(data):
    frame, _ = data
    y = 3.0 * frame["x"].to_numpy() + 1.0 + np.random.default_rng(2).normal(scale=0.5, size=N)
    base = infer(Linear(), frame, 100)
    m = run("regression", base, base, y)
    assert m.metric == "mae"
    assert m.delta == 0.0 and m.ci == (0.0, 0.0) and not m.significant and m.flip_rate == 0.0


def test_a_destructive_mutation_is_a_significant_loss_of_auc(data):
    frame, labels = data
    base = infer(Logistic(), frame, 100)
    broken = infer(Logistic(), apply(parse_mutation("shuffle"), frame, ["x"], 7), 100)
    m = run("classification", base, broken, labels)
    assert m.baseline > 0.8
    assert m.mutated == pytest.approx(roc_auc_score(labels, broken.scores))
    assert m.delta == pytest.approx(m.mutated - m.baseline)
    assert m.delta < -0.2
    low, high = m.ci
    assert low <= high < 0
    assert m.significant is True
    assert m.loss == pytest.approx(-m.delta / (m.baseline - 0.5))
    assert m.loss > 0.5
    assert m.flip_rate > 0.2
    assert m.mean_abs_shift == pytest.approx(np.mean(np.abs(broken.scores - base.scores)))


def test_a_mutation_that_does_nothing_to_the_model_is_not_significant(data):
    frame, labels = data
    base = infer(Logistic(), frame, 100)
    other = infer(Logistic(), apply(parse_mutation("shuffle"), frame, ["noise"], 7), 100)
    m = run("classification", base, other, labels)
    assert m.delta == 0.0 and not m.significant and m.flip_rate == 0.0


def test_a_noisy_small_drop_has_an_interval_across_zero(data):
    frame, labels = data
    base = infer(Logistic(), frame, 100)
    rng = np.random.default_rng(5)
    noisy = inference(base.scores + rng.normal(scale=0.02, size=N))
    m = run("classification", base, noisy, labels)
    low, high = m.ci
    assert low < 0 < high or (low == high == 0)
    assert not m.significant


def test_rows_the_mutated_pass_failed_are_counted_and_left_out(data):
    frame, labels = data
    base = infer(Logistic(), frame, 10)
    nulled = frame.copy()
    nulled.loc[[0, 1, 2, 33], "x"] = np.nan  # fails batches [0, 10) and [30, 40)
    mutated = infer(Logistic(), nulled, 10)
    m = run("classification", base, mutated, labels)
    assert m.failures == 20
    assert m.rows == N - 20
    kept = np.ones(N, dtype=bool)
    kept[0:10] = kept[30:40] = False
    assert m.baseline == pytest.approx(roc_auc_score(labels[kept], base.scores[kept]))
    assert m.delta == 0.0


def test_rows_without_a_label_or_a_baseline_score_are_not_measured(data):
    _, labels = data
    labels = labels.copy()
    scores = np.linspace(0, 1, N)
    labels[:5] = np.nan
    base_scores = scores.copy()
    base_scores[5:8] = np.nan
    m = run("classification", inference(base_scores), inference(scores), labels)
    assert m.rows == N - 8 and m.failures == 0


def test_one_class_left_gives_no_metric_and_no_loss():
    labels = np.ones(30)
    scores = np.linspace(0, 1, 30)
    m = run("classification", inference(scores), inference(scores[::-1]), labels)
    assert m.baseline is None and m.mutated is None and m.delta is None
    assert m.loss is None and m.ci is None and m.significant is False
    assert m.rows == 30


def test_classification_flips_count_changed_predicted_classes():
    labels = np.array([0, 1] * 10, dtype="float64")
    scores = np.linspace(0.05, 0.95, 20)
    base_classes = np.array([0] * 10 + [1] * 10, dtype=object)
    mutated_classes = base_classes.copy()
    mutated_classes[[0, 5, 12]] = 1 - mutated_classes[[0, 5, 12]]
    m = run("classification", inference(scores, base_classes), inference(scores, mutated_classes), labels)
    assert m.flip_rate == pytest.approx(3 / 20)


def test_regression_flips_use_the_tolerance_times_the_spread():
    base = np.linspace(0, 10, 100)
    spread = float(np.std(base))
    moved = base.copy()
    moved[:30] += 0.05 * spread  # within a tolerance of 0.1
    moved[30:70] += 0.2 * spread  # beyond it
    y = base + 0.3
    m = run("regression", inference(base), inference(moved), y, tolerance=0.1)
    assert m.flip_rate == pytest.approx(0.4)
    assert run("regression", inference(base), inference(moved), y, tolerance=0.01).flip_rate == pytest.approx(0.7)
    assert run("regression", inference(base), inference(moved), y, tolerance=0.5).flip_rate == 0.0


def test_regression_flips_of_a_constant_baseline_count_any_move():
    base = np.full(10, 2.0)
    moved = base.copy()
    moved[:3] += 1e-6
    m = run("regression", inference(base), inference(moved), np.arange(10.0))
    assert m.flip_rate == pytest.approx(0.3)


def test_a_worse_regressor_is_a_significant_rise_of_mae(data):
    frame, _ = data
    y = 3.0 * frame["x"].to_numpy() + 1.0 + np.random.default_rng(2).normal(scale=0.5, size=N)
    base = infer(Linear(), frame, 100)
    worse = infer(Linear(), apply(parse_mutation("scale:3"), frame, ["x"], 7), 100)
    m = run("regression", base, worse, y)
    assert m.baseline == pytest.approx(mean_absolute_error(y, base.scores))
    assert m.mutated == pytest.approx(mean_absolute_error(y, worse.scores))
    assert m.delta > 0
    low, _ = m.ci
    assert low > 0 and m.significant
    assert m.loss == pytest.approx(m.delta / m.baseline)


def test_a_better_regressor_is_a_negative_loss_and_not_significant():
    y = np.linspace(0, 10, 200)
    rng = np.random.default_rng(0)
    bad = y + rng.normal(scale=2.0, size=200)
    good = y + rng.normal(scale=0.1, size=200)
    m = run("regression", inference(bad), inference(good), y)
    assert m.delta < 0 and m.loss < 0 and not m.significant


def test_the_bootstrap_is_deterministic_by_seed(data):
    frame, labels = data
    base = infer(Logistic(), frame, 100)
    broken = infer(Logistic(), apply(parse_mutation("shift:1", 0.5), frame, ["x"], 7), 100)
    first = run("classification", base, broken, labels, seed=3)
    again = run("classification", base, broken, labels, seed=3)
    other = run("classification", base, broken, labels, seed=4)
    assert first == again
    assert first.ci != other.ci
    assert first.delta == other.delta  # the point estimate does not depend on the seed


def test_more_confidence_widens_the_interval(data):
    frame, labels = data
    base = infer(Logistic(), frame, 100)
    broken = infer(Logistic(), apply(parse_mutation("shift:1", 0.5), frame, ["x"], 7), 100)
    kwargs = dict(replicates=300, seed=1, flip_tolerance=0.1)
    narrow = measure("classification", base, broken, labels, confidence=0.5, **kwargs)
    wide = measure("classification", base, broken, labels, confidence=0.99, **kwargs)
    assert wide.ci[0] < narrow.ci[0] <= narrow.ci[1] < wide.ci[1]


def test_measurement_json_rounds_and_keeps_none(data):
    frame, labels = data
    base = infer(Logistic(), frame, 100)
    out = run("classification", base, base, labels).to_json()
    assert out["ci"] == [0.0, 0.0] and out["significant"] is False and out["rows"] == N
    assert out["baseline"] == round(out["baseline"], 6)
    empty = run("classification", inference(np.ones(4)), inference(np.ones(4)), np.ones(4)).to_json()
    assert empty["loss"] is None and empty["ci"] is None


def test_only_rows_the_baseline_scored_count_as_mutated_failures():
    labels = np.array([0, 1] * 10, dtype="float64")
    labels[19] = np.nan  # unlabeled: not measured, so not a failure either
    base = np.linspace(0, 1, 20)
    base[:5] = np.nan  # the baseline could not score these: the mutation is not to blame
    mutated = np.linspace(0, 1, 20)
    mutated[[0, 1, 2, 3, 4, 10, 11, 12, 19]] = np.nan
    m = run("classification", inference(base), inference(mutated), labels)
    assert m.failures == 3
    assert m.rows == 20 - 5 - 3 - 1
