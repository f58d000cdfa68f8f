"""A feature the model consumes that is gone from the catalog, or whose source dataset is gone or deprecated.

Either the model lists a feature URN nobody describes any more (a renamed or
dropped feature view), or the feature still exists but the data behind it no
longer does (or soon will not): the next materialisation serves nulls or fails.
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
        if feature.missing or feature.removed:
            case = "missing" if feature.missing else "removed"
            findings.append(
                finding(
                    closure,
                    NAME,
                    config.severity(NAME, case),
                    feature.urn,
                    f"{closure.model.name} consumes feature {display_name(feature.urn)}, "
                    f"which {'is not in the catalog' if feature.missing else 'was removed from the catalog'}",
                    path=closure.path_to(feature.urn),
                    condition=f"feature_{case}",
                )
            )
            continue
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
