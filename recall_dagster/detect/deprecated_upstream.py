"""A dataset anywhere upstream is deprecated or retired from the catalog.

The replacement DataHub records (``deprecation.replacement``) is named so the
fix is one read away.
"""

from __future__ import annotations

from recall_dagster.detect.config import ScanConfig
from recall_dagster.detect.finding import Finding, finding
from recall_dagster.detect.state import DetectorState
from recall_dagster.estate import ModelClosure, display_name
from recall_dagster.detect.declared import Detector

NAME = "deprecated_upstream"
CASES = ("deprecated", "removed")


def detect(closure: ModelClosure, config: ScanConfig, state: DetectorState) -> list[Finding]:
    findings: list[Finding] = []
    for urn, dataset in sorted(closure.datasets.items()):
        if dataset.removed:
            case, what = "removed", "was removed from the catalog"
        elif dataset.deprecated:
            case, what = "deprecated", "is deprecated"
        else:
            continue
        note = f" ({dataset.deprecation_note})" if dataset.deprecation_note else ""
        replacement = f"; replaced by {display_name(dataset.replacement)}" if dataset.replacement else ""
        findings.append(
            finding(
                closure,
                NAME,
                config.severity(NAME, case),
                urn,
                f"{dataset.name} {what}{note} but {closure.model.name} still depends on it{replacement}",
                cause=urn,
                replacement=dataset.replacement,
                note=dataset.deprecation_note,
            )
        )
    return findings


DETECTOR = Detector(NAME, detect, CASES)
