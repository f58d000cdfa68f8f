"""Baseline against mutated inference on the same rows: the metric, its delta with a CI, flips, shift.

Pure numpy over what a :class:`Predictor` returns, so the statistics are
tested without a model registry.  The confidence interval is a paired Poisson
bootstrap: every replicate weighs each row by a Poisson(1) draw, the same
weights for baseline and mutated scores, so the interval is on the *delta*
and no replicate re-sorts the rows (ROC AUC is computed from one sort, tie
groups included).  Everything random comes from the seed it is given.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol

import numpy as np
import pandas as pd

from recall_dagster.errors import reason

Task = Literal["classification", "regression"]
METRICS: dict[Task, str] = {"classification": "roc_auc", "regression": "mae"}
HIGHER_IS_BETTER = {"roc_auc": True, "mae": False}
# What a metric's loss is a share of: ROC AUC's skill above chance (0.5), an error's own size.
CHANCE = {"roc_auc": 0.5, "mae": 0.0}
_REPLICATES_PER_CHUNK = 25


class Predictor(Protocol):
    """A loaded model: scores (positive-class probability, or the prediction) and, for classifiers, classes."""

    task: Task

    def predict(self, frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray | None]: ...


@dataclass(frozen=True)
class Inference:
    scores: np.ndarray  # float per row, NaN where the row's batch raised
    classes: np.ndarray | None  # predicted class per row (classifiers), None elsewhere
    failures: int  # rows in batches that raised
    error: str | None  # the first error, as the model raised it

    @property
    def scored(self) -> np.ndarray:
        return ~np.isnan(self.scores)


def infer(predictor: Predictor, frame: pd.DataFrame, batch_rows: int) -> Inference:
    """Score ``frame`` in batches; a batch that raises leaves its rows NaN and counts them as failures.

    Batches, not rows, so 100,000 rows cost a handful of calls; the failure
    count is then an upper bound at batch granularity, which the report says.
    """
    n = len(frame)
    scores = np.full(n, np.nan)
    classes: np.ndarray | None = None
    failures, error = 0, None
    for start in range(0, n, max(1, batch_rows)):
        batch = frame.iloc[start : start + batch_rows]
        try:
            batch_scores, batch_classes = predictor.predict(batch)
            values = np.asarray(batch_scores, dtype="float64").reshape(-1)
            if len(values) != len(batch):
                raise ValueError(f"the model returned {len(values)} scores for {len(batch)} rows")
        except Exception as err:  # whatever the model raises on bad input is the measurement
            failures += len(batch)
            error = error or reason(err)
            continue
        scores[start : start + len(batch)] = values
        if batch_classes is not None:
            if classes is None:
                classes = np.full(n, None, dtype=object)
            classes[start : start + len(batch)] = np.asarray(batch_classes, dtype=object).reshape(-1)
    return Inference(scores=scores, classes=classes, failures=failures, error=error)


@dataclass(frozen=True)
class Measurement:
    metric: str
    baseline: float | None  # metric on the rows both passes scored
    mutated: float | None
    delta: float | None  # mutated - baseline, in the metric's units
    ci: tuple[float, float] | None  # bootstrap interval of the delta
    loss: float | None  # share of the model's skill lost (AUC above 0.5; MAE's own size): > 0 is worse
    significant: bool  # the interval lies wholly on the worse side of zero
    flip_rate: float  # share of rows whose predicted class (or a regressor's prediction, beyond tolerance) changed
    mean_abs_shift: float  # mean |mutated score - baseline score|
    failures: int  # rows the mutated data failed to score
    rows: int  # rows both passes scored

    def to_json(self) -> dict[str, Any]:
        def num(v: float | None) -> float | None:
            return None if v is None or not np.isfinite(v) else round(float(v), 6)

        return {
            "metric": self.metric,
            "baseline": num(self.baseline),
            "mutated": num(self.mutated),
            "delta": num(self.delta),
            "ci": [num(self.ci[0]), num(self.ci[1])] if self.ci else None,
            "loss": num(self.loss),
            "significant": self.significant,
            "flip_rate": num(self.flip_rate),
            "mean_abs_shift": num(self.mean_abs_shift),
            "failures": self.failures,
            "rows": self.rows,
        }


def _auc(scores: np.ndarray, labels: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Weighted ROC AUC for each row of ``weights`` (shape (R, n)), ties counted half, from one sort."""
    order = np.argsort(scores, kind="mergesort")
    s, y, w = scores[order], labels[order], weights[:, order]
    starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])
    pos = np.add.reduceat(w * y, starts, axis=1)
    neg = np.add.reduceat(w * (1.0 - y), starts, axis=1)
    below = np.cumsum(neg, axis=1) - neg
    with np.errstate(invalid="ignore", divide="ignore"):
        return (pos * (below + 0.5 * neg)).sum(axis=1) / (pos.sum(axis=1) * neg.sum(axis=1))


def _mae(scores: np.ndarray, labels: np.ndarray, weights: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return (weights @ np.abs(scores - labels)) / weights.sum(axis=1)


_METRIC_FUNCTIONS = {"roc_auc": _auc, "mae": _mae}


def metric_of(task: Task, scores: np.ndarray, labels: np.ndarray) -> float:
    name = METRICS[task]
    return float(_METRIC_FUNCTIONS[name](scores, labels, np.ones((1, len(scores))))[0])


def _bootstrap(
    name: str, base: np.ndarray, mutated: np.ndarray, labels: np.ndarray, replicates: int, seed: int
) -> np.ndarray:
    """Paired replicate deltas (mutated - baseline), NaN-free."""
    rng = np.random.default_rng(seed)
    function = _METRIC_FUNCTIONS[name]
    deltas = []
    for start in range(0, replicates, _REPLICATES_PER_CHUNK):
        weights = rng.poisson(1.0, size=(min(_REPLICATES_PER_CHUNK, replicates - start), len(labels))).astype(
            "float64"
        )
        deltas.append(function(mutated, labels, weights) - function(base, labels, weights))
    out = np.concatenate(deltas) if deltas else np.array([])
    return out[np.isfinite(out)]


def _flips(task: Task, base: Inference, mutated: Inference, both: np.ndarray, tolerance: float) -> float:
    if not both.any():
        return 0.0
    if task == "classification" and base.classes is not None and mutated.classes is not None:
        return float(np.mean(base.classes[both] != mutated.classes[both]))
    spread = float(np.std(base.scores[both]))
    moved = np.abs(mutated.scores[both] - base.scores[both])
    return float(np.mean(moved > tolerance * spread if spread > 0 else moved > 0))


def measure(
    task: Task,
    base: Inference,
    mutated: Inference,
    labels: np.ndarray,
    *,
    replicates: int,
    confidence: float,
    seed: int,
    flip_tolerance: float,
) -> Measurement:
    """Compare the two passes on the rows the baseline scored; mutated failures are counted among them."""
    name = METRICS[task]
    known = ~np.isnan(labels)
    baseline_rows = base.scored & known
    both = baseline_rows & mutated.scored
    failures = int((baseline_rows & ~mutated.scored).sum())
    y = labels[both]
    b_scores, m_scores = base.scores[both], mutated.scores[both]
    usable = len(y) > 0 and (name != "roc_auc" or 0 < y.sum() < len(y))
    baseline = metric_of(task, b_scores, y) if usable else None
    after = metric_of(task, m_scores, y) if usable else None
    delta = after - baseline if baseline is not None and after is not None else None
    ci, significant, loss = None, False, None
    if delta is not None and baseline is not None:
        deltas = _bootstrap(name, b_scores, m_scores, y, replicates, seed)
        if len(deltas):
            tail = (1 - confidence) / 2
            low, high = (float(q) for q in np.quantile(deltas, [tail, 1 - tail]))
            ci = (low, high)
            significant = high < 0 if HIGHER_IS_BETTER[name] else low > 0
        worse = -delta if HIGHER_IS_BETTER[name] else delta
        reference = abs(baseline - CHANCE[name])
        loss = worse / reference if reference else worse
    shift = float(np.mean(np.abs(m_scores - b_scores))) if len(y) else 0.0
    return Measurement(
        metric=name,
        baseline=baseline,
        mutated=after,
        delta=delta,
        ci=ci,
        loss=loss,
        significant=significant,
        flip_rate=_flips(task, base, mutated, both, flip_tolerance),
        mean_abs_shift=shift,
        failures=failures,
        rows=int(both.sum()),
    )
