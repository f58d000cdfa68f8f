"""A feature whose source dataset is gone from the catalog, soft-deleted or deprecated.

The feature still exists and the model still consumes it, but the data behind
it no longer does (or soon will not): the next materialisation serves nulls or
fails.
"""

from __future__ import annotations

from recall_dagster.detect.config import RecallConfig
from recall_dagster.detect.finding import Finding, finding
from recall_dagster.detect.state import DetectorState
from recall_dagster.estate import Dataset, ModelClosure, display_name

NAME = "orphaned_feature"
CASES = ("missing", "removed", "deprecated")


def _condition(source: Dataset) -> tuple[str, str] | None:
    if source.missing:
        return "missing", "which is not in the catalog"
    if source.removed:
        return "removed", "which was removed from the catalog"
    if source.deprecated:
        replacement = f"; move it to {display_name(source.replacement)}" if source.replacement else ""
        return "deprecated", f"which is deprecated{replacement}"
    return None


def detect(closure: ModelClosure, config: RecallConfig, state: DetectorState) -> list[Finding]:
    findings: list[Finding] = []
    for feature in closure.features:
        for urn in feature.sources:
            source = closure.dataset(urn)
            condition = _condition(source)
            if condition is None:
                continue
            case, why = condition
            findings.append(
                finding(
                    closure,
                    NAME,
                    config.severity(NAME, case),
                    feature.urn,
                    f"feature {display_name(feature.urn)} is computed from {source.name}, {why}",
                    cause=urn,
                    path=(*closure.path_to(feature.urn), urn),
                    source=urn,
                    condition=case,
                    replacement=source.replacement,
                )
            )
    return findings
