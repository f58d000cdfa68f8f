"""A live deployment serves a model version the registry no longer calls production.

Usually a promotion that never rolled out, or a rollback nobody recorded:
either way the model answering traffic is not the one everybody reviews.
"""

from __future__ import annotations

from recall_dagster.detect.config import ScanConfig
from recall_dagster.detect.finding import Finding, finding
from recall_dagster.detect.state import DetectorState
from recall_dagster.estate import ModelClosure, display_name
from recall_dagster.detect.declared import Detector

NAME = "version_mismatch"
CASES = ("mismatch",)


def detect(closure: ModelClosure, config: ScanConfig, state: DetectorState) -> list[Finding]:
    production = closure.production_versions
    if not production or closure.model.urn in production:
        return []
    expected = ", ".join(display_name(v) for v in production)
    return [
        finding(
            closure,
            NAME,
            config.severity(NAME, "mismatch"),
            deployment.urn,
            f"deployment {deployment.name} serves {closure.model.name}, but the registry's production "
            f"version is {expected}",
            served_version=closure.model.urn,
            production_versions=list(production),
        )
        for deployment in closure.live_deployments
    ]


DETECTOR = Detector(NAME, detect, CASES)
