"""Serving reads data training never saw, or training read data serving dropped.

The serving path is feature table -> features -> source datasets; the training
path is what the model's recorded runs read.  A serving source is consistent
with training when training read it, read something derived from it, or read
its own inputs; symmetrically for training inputs.  Label tables are read by
training alone by design and are never reported.
"""

from __future__ import annotations

from recall_dagster.detect.config import RecallConfig, matches_dataset
from recall_dagster.detect.finding import Finding, finding
from recall_dagster.detect.state import DetectorState
from recall_dagster.estate import ModelClosure

NAME = "training_serving_skew"
CASES = ("serving_not_trained", "trained_not_served", "no_training_run")


def _covered(urn: str, other_side: tuple[str, ...], other_reach: frozenset[str], closure: ModelClosure) -> bool:
    """Whether ``urn`` is, feeds, or is fed by a dataset the other side reads."""
    return urn in other_reach or bool(closure.upstream_of([urn]) & set(other_side))


def detect(closure: ModelClosure, config: RecallConfig, state: DetectorState) -> list[Finding]:
    model = closure.model
    if not closure.features and not closure.training_runs:
        return []
    if not closure.has_training_record:
        return [
            finding(
                closure,
                NAME,
                config.severity(NAME, "no_training_run"),
                model.urn,
                f"{model.name} has no recorded training run with inputs, so training/serving skew "
                "cannot be checked",
            )
        ]
    labels = {u for u, d in closure.datasets.items() if any(matches_dataset(p, d) for p in config.label_tables)}
    serving = tuple(s for s in closure.serving_sources if s not in labels)
    training = tuple(t for t in closure.training_inputs if t not in labels)
    serving_reach = closure.upstream_of(serving)
    training_reach = closure.upstream_of(training)
    findings: list[Finding] = []
    for urn in sorted(serving):
        if not _covered(urn, training, training_reach, closure):
            findings.append(
                finding(
                    closure,
                    NAME,
                    config.severity(NAME, "serving_not_trained"),
                    urn,
                    f"{model.name} serves features from {closure.dataset(urn).name}, which its training "
                    "run never read: it predicts on data it was not trained on",
                    cause=urn,
                    side="serving",
                    training_inputs=sorted(training),
                )
            )
    for urn in sorted(training) if serving else ():  # no declared serving source: nothing to compare
        if not _covered(urn, serving, serving_reach, closure):
            findings.append(
                finding(
                    closure,
                    NAME,
                    config.severity(NAME, "trained_not_served"),
                    urn,
                    f"{model.name} was trained on {closure.dataset(urn).name}, which serving no longer "
                    "reads: retrain on the serving sources or restore them",
                    cause=urn,
                    side="training",
                    serving_sources=sorted(serving),
                )
            )
    return findings
