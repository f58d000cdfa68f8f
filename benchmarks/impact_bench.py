"""How long eight impact-test mutations take on 100,000 evaluation rows, against one plain inference pass.

Fits a scikit-learn pipeline like the demo's fraud model (ordinal-encoded
category, histogram gradient boosting) on synthetic rows, then runs the same
code ``recall impact`` runs for each mutation: apply it to an isolated copy,
score the copy in batches, compare with the baseline on the same rows with a
paired bootstrap, judge.  The baseline of the ratio is one plain inference
pass over the rows, measured in the same run.  Target: all eight within 20 s
on a 2-core machine.  Prints one JSON line last.

    .venv/bin/python benchmarks/impact_bench.py [--rows N] [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np
import pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OrdinalEncoder

from recall_dagster.config.load import load
from recall_dagster.impact.measure import infer, measure
from recall_dagster.impact.models import SklearnPredictor
from recall_dagster.impact.mutations import apply, parse_mutation
from recall_dagster.impact.policy import judge

MUTATIONS = [
    ("null_fraction:0.1", "amount"),
    ("scale:100", "amount"),
    ("shift", "ratio"),
    ("clip", "risk"),
    ("constant", "ratio"),
    ("shuffle", "risk"),
    ("timezone_shift:3", "hour"),
    ("type_coercion", "amount"),
]
TARGET_S = 20.0


def _rows(n: int, seed: int) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "amount": rng.lognormal(3.5, 1.0, n),
        "hour": rng.integers(0, 24, n).astype("float64"),
        "ratio": rng.lognormal(0.0, 0.4, n),
        "risk": rng.beta(2, 8, n),
        "segment": rng.choice(["consumer", "smb", "enterprise"], n).astype(object),
    })
    logit = -4 + 1.5 * (frame["ratio"] > 1.6) + 3 * frame["risk"] + 0.8 * (frame["hour"] < 5) + 0.002 * frame["amount"]
    labels = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype("float64")
    return frame, labels.to_numpy()


def _model(frame: pd.DataFrame, labels: np.ndarray) -> Pipeline:
    encode = ColumnTransformer(
        [("categorical", OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=-1), ["segment"])],
        remainder="passthrough",
    )
    pipeline = Pipeline([("encode", encode), ("estimator", HistGradientBoostingClassifier(max_iter=150, random_state=7))])
    return pipeline.fit(frame, labels)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3, help="plain inference passes; the median is the baseline")
    args = parser.parse_args()
    config = load().impact

    frame, labels = _rows(args.rows * 2, seed=1)
    predictor = SklearnPredictor(_model(frame.iloc[: args.rows], labels[: args.rows]))
    rows, y = frame.iloc[args.rows :].reset_index(drop=True), labels[args.rows :]

    plain = []
    for _ in range(args.repeat):
        started = time.perf_counter()
        predictor.predict(rows)
        plain.append(time.perf_counter() - started)
    baseline_s = statistics.median(plain)

    started = time.perf_counter()
    base = infer(predictor, rows, config.batch_rows)
    timings, verdicts = {}, {}
    for spec, column in MUTATIONS:
        one = time.perf_counter()
        mutated = infer(predictor, apply(parse_mutation(spec), rows, [column], config.seed), config.batch_rows)
        result = measure(
            predictor.task, base, mutated, y, replicates=config.bootstrap, confidence=config.confidence,
            seed=config.seed, flip_tolerance=config.flip_tolerance,
        )
        verdicts[spec] = judge(result, config).verdict.value
        timings[spec] = round(time.perf_counter() - one, 3)
        print(f"{spec:<18} on {column:<7} {timings[spec]:6.2f} s  {verdicts[spec]}", flush=True)
    total_s = time.perf_counter() - started
    print(json.dumps({
        "rows": args.rows,
        "mutations": len(MUTATIONS),
        "bootstrap": config.bootstrap,
        "plain_inference_s": round(baseline_s, 3),
        "total_s": round(total_s, 3),
        "ratio_to_plain_inference": round(total_s / baseline_s, 1),
        "target_s": TARGET_S,
        "within_target": total_s <= TARGET_S,
        "per_mutation_s": timings,
        "verdicts": verdicts,
    }))


if __name__ == "__main__":
    main()
