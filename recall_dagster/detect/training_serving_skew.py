"""Serving reads data training never saw, or training read data serving dropped.

The serving path is feature table -> features -> source datasets; the training
path is what the model's recorded runs read.  A serving source is consistent
with training when training read it or something derived from it, or when it is
derived from what training read *and from nothing else*: a serving table that
joins the trained table with a new input brings in data training never saw,
and that is skew however closely the two tables are related.  Training inputs
are judged symmetrically.  Label tables are read by training alone by design
and are never reported.  The sources of one feature are one body of data under
several names when one is an object store's path (SageMaker's S3 offline store
and the Glue table over it): such a source is consistent when another source of
the feature is, and an object-store path at or below one the other side reads
is the same data.
"""

from __future__ import annotations

from recall_dagster.detect.config import ScanConfig, matches_dataset
from recall_dagster.detect.finding import Finding, finding
from recall_dagster.detect.state import DetectorState
from recall_dagster.estate import ModelClosure
from recall_dagster.estate.storage import is_object_store, same_data
from recall_dagster.detect.declared import Detector

NAME = "training_serving_skew"
CASES = ("serving_not_trained", "trained_not_served", "no_training_run")


def _origins(closure: ModelClosure, urns: tuple[str, ...]) -> frozenset[str]:
    """The datasets the given ones derive from that derive from nothing in the closure, by canonical name."""
    return frozenset(
        closure.canonical(u) for u in closure.upstream_of(urns)
        if not any(v in closure.datasets for v in closure.dataset(u).upstreams)
    )


def _unseen(
    urn: str, other_side: tuple[str, ...], other_reach: frozenset[str], closure: ModelClosure, labels: set[str]
) -> frozenset[str] | None:
    """None when ``urn`` is consistent with what the other side reads; else the origins it adds to it
    (itself, when it shares no lineage with the other side at all). Label tables never count as added."""
    if urn in other_reach or any(same_data(urn, o) for o in other_side):
        return None
    if not closure.upstream_of([urn]) & set(other_side):
        return frozenset({urn})
    added = _origins(closure, (urn,)) - _origins(closure, other_side) - {closure.canonical(u) for u in labels}
    return added or None


def _twins(closure: ModelClosure) -> dict[str, set[str]]:
    """Each serving source -> the other names of the same data: the sources beside it of a feature kept on an
    object store (its offline files and the table over them)."""
    twins: dict[str, set[str]] = {}
    for feature in closure.serving_features:
        if not any(map(is_object_store, feature.sources)):
            continue
        names = {closure.canonical(s) for s in feature.sources}
        for name in names:
            twins.setdefault(name, set()).update(names - {name})
    return twins


def detect(closure: ModelClosure, config: ScanConfig, state: DetectorState) -> list[Finding]:
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
    twins = _twins(closure)
    for urn in sorted(serving):
        unseen = _unseen(urn, training, training_reach, closure, labels)
        if unseen is None or any(_unseen(t, training, training_reach, closure, labels) is None
                                 for t in twins.get(urn, ())):
            continue
        name = closure.dataset(urn).name
        how = (
            f"{name}, which its training run never read" if unseen == {urn}
            else f"{name}, which joins what training read with "
            f"{', '.join(sorted(closure.dataset(u).name for u in unseen))}, never read by training"
        )
        findings.append(
            finding(
                closure,
                NAME,
                config.severity(NAME, "serving_not_trained"),
                urn,
                f"{model.name} serves features from {how}: it predicts on data it was not trained on",
                cause=urn,
                side="serving",
                training_inputs=sorted(training),
                unseen_inputs=sorted(unseen),
            )
        )
    for urn in sorted(training) if serving else ():  # no declared serving source: nothing to compare
        if _unseen(urn, serving, serving_reach, closure, labels) is not None:
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


DETECTOR = Detector(NAME, detect, CASES)
