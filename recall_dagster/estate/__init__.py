"""Typed views of a model's upstream world, resolved from the metadata graph.

The package exports the views and the closure, which are plain values; the readers that build them from a
graph (:mod:`recall_dagster.estate.resolve`, :mod:`recall_dagster.kept.incremental`) are imported by name, so
importing a view never loads the graph.
"""

from recall_dagster.estate.closure import Closure, ModelClosure, assemble_closure
from recall_dagster.estate.names import display_name
from recall_dagster.estate.options import ResolveOptions
from recall_dagster.estate.views import (
    Assertion,
    ColumnEdge,
    Dataset,
    Deployment,
    Feature,
    FeatureTable,
    FieldRef,
    Freshness,
    Model,
    Owner,
    SchemaField,
    Term,
    TrainingRun,
)

__all__ = [
    "Assertion",
    "Closure",
    "ColumnEdge",
    "Dataset",
    "Deployment",
    "Feature",
    "FeatureTable",
    "FieldRef",
    "Freshness",
    "Model",
    "ModelClosure",
    "Owner",
    "ResolveOptions",
    "SchemaField",
    "Term",
    "TrainingRun",
    "assemble_closure",
    "display_name",
]
