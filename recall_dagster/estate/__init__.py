"""Typed views of a model's upstream world, resolved from the metadata graph."""

from recall_dagster.estate.closure import ModelClosure, assemble_closure
from recall_dagster.estate.names import display_name
from recall_dagster.estate.resolve import ResolveOptions, resolve_closures
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
    "resolve_closures",
]
