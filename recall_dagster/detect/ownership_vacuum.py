"""The model, or a dataset it trains or serves on, has nobody to call.

An owner who left (deleted, suspended or inactive user) counts as no owner.
Only the datasets on the serving path (feature sources) and training path
(datasets a run read) are held to this: those are where a page must land.
"""

from __future__ import annotations

from recall_dagster.detect.config import ScanConfig
from recall_dagster.detect.finding import Finding, finding
from recall_dagster.detect.state import DetectorState
from recall_dagster.estate import ModelClosure, Owner
from recall_dagster.detect.declared import Detector

NAME = "ownership_vacuum"
CASES = ("model", "dataset")


def _why(owners: tuple[Owner, ...]) -> str:
    if not owners:
        return "has no owner"
    gone = ", ".join(o.urn.rsplit(":", 1)[-1] for o in owners)
    return f"has no active owner ({gone} left)"


def detect(closure: ModelClosure, config: ScanConfig, state: DetectorState) -> list[Finding]:
    findings: list[Finding] = []
    model = closure.model
    if not model.has_active_owner:
        findings.append(
            finding(
                closure,
                NAME,
                config.severity(NAME, "model"),
                model.urn,
                f"model {model.name} {_why(model.owners)}: nobody is accountable when it degrades",
                former_owners=[o.urn for o in model.owners],
            )
        )
    serving = set(closure.feature_sources)
    for urn in sorted(serving | set(closure.training_inputs)):
        dataset = closure.dataset(urn)
        same = closure.same_table(urn)
        if dataset.missing or any(d.has_active_owner for d in same):
            continue
        owners = tuple(o for d in same for o in d.owners)
        findings.append(
            finding(
                closure,
                NAME,
                config.severity(NAME, "dataset"),
                urn,
                f"{dataset.name} {_why(owners)} but {model.name} "
                f"{'serves from' if urn in serving else 'trains on'} it",
                cause=urn,
                former_owners=[o.urn for o in owners],
            )
        )
    return findings


DETECTOR = Detector(NAME, detect, CASES)
