"""A feature the model consumes that is gone from the catalog, or whose source dataset is gone or deprecated.

Either the model lists a feature URN nobody describes any more (a renamed or
dropped feature view), or the feature still exists but the data behind it no
longer does (or soon will not): the next materialisation serves nulls or fails.
A feature store's source is often an export that joins several tables (Feast's
file or warehouse sources): the feature's own column is followed one column
lineage hop up, so a retired table orphans exactly the features it fills, not
its neighbours in the same export. A feature kept on an object store (SageMaker's
S3 offline store beside its Glue table) is not orphaned by a source nothing
ever catalogued: that is a coverage gap (``coverage.uncatalogued_feature_sources``).
"""

from __future__ import annotations

from typing import Any, Iterator

from recall_dagster.detect.config import ScanConfig
from recall_dagster.detect.finding import Finding, finding
from recall_dagster.detect.state import DetectorState
from recall_dagster.estate import Dataset, Feature, ModelClosure, display_name
from recall_dagster.detect.declared import Detector

NAME = "orphaned_feature"
CASES = ("missing", "removed", "deprecated")


def _condition(entity: Dataset | Feature) -> tuple[str, str] | None:
    if entity.missing:
        return "missing", "which is not in the catalog"
    if entity.removed:
        return "removed", "which was removed from the catalog"
    if isinstance(entity, Dataset) and entity.deprecated:
        replacement = f"; move it to {display_name(entity.replacement)}" if entity.replacement else ""
        return "deprecated", f"which is deprecated{replacement}"
    return None


Gone = dict[str, tuple[Dataset, str, str]]  # canonical table URN -> the twin that is gone, its case and why


def _gone_tables(closure: ModelClosure) -> Gone:
    """The tables of the closure one of whose twins is missing, removed or deprecated, by canonical URN."""
    gone: Gone = {}
    for urn, dataset in sorted(closure.datasets.items()):
        condition = _condition(dataset)
        if condition is not None:
            gone.setdefault(closure.canonical(urn), (dataset, *condition))
    return gone


def _problems(
    closure: ModelClosure, feature: Feature, gone: Gone
) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(case, message, evidence) for the feature itself, else for each of its sources."""
    missing = _condition(feature)
    if missing is not None:
        case, why = missing
        message = f"{closure.model.name} consumes feature {display_name(feature.urn)}, {why}"
        yield case, message, {"path": closure.path_to(feature.urn), "condition": f"feature_{case}"}
        return
    for urn in feature.sources:
        if urn in closure.uncatalogued_sources:
            continue  # never catalogued, of a feature kept on an object store: coverage
        source = closure.dataset(urn)
        condition = _condition(source)
        if condition is not None:
            case, why = condition
            message = f"feature {display_name(feature.urn)} is computed from {source.name}, {why}"
            evidence = {"cause": urn, "path": (*closure.path_to(feature.urn), urn), "source": urn,
                        "condition": case, "replacement": source.replacement}
            yield case, message, evidence
        elif gone:
            yield from _column_problems(closure, feature, source, gone)


def _column_problems(
    closure: ModelClosure, feature: Feature, source: Dataset, gone: Gone
) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """The tables the feature's column in ``source`` is read from (one column lineage hop, across twins),
    where one of their twins is gone."""
    column = feature.column or feature.name
    columns = closure.columns
    for table_urn, upstream_column in columns.upstream.get(columns.col((source.urn, column)), ()):
        if table_urn not in gone:
            continue
        table, case, why = gone[table_urn]
        message = (f"feature {display_name(feature.urn)} is served from {source.name}.{column}, "
                   f"read from {table.name}.{upstream_column}, {why}")
        evidence = {"cause": table.urn, "path": (*closure.path_to(feature.urn), source.urn, table.urn),
                    "source": source.urn, "column": upstream_column, "condition": case,
                    "replacement": table.replacement}
        yield case, message, evidence


def detect(closure: ModelClosure, config: ScanConfig, state: DetectorState) -> list[Finding]:
    gone = _gone_tables(closure)
    return [
        finding(closure, NAME, config.severity(NAME, case), feature.urn, message, **evidence)
        for feature in closure.features
        for case, message, evidence in _problems(closure, feature, gone)
    ]


DETECTOR = Detector(NAME, detect, CASES)
