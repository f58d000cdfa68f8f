"""The warehouse SQL of a model's training, generated from the feature registry.

Training asks the warehouse for its labels (:func:`label_query`) and Feast for
their features; :func:`build_training_query` is the join that returns the same
rows from the warehouse alone: which tables stand behind each feature (what the
run records as its inputs) and the query a run logs for readers without Feast.
Both read exactly the columns the registry says feed the model, so the lineage
DataHub shows (feature → column) is what the model was trained on. The SQL is
plain ANSI (schema-qualified names, LEFT JOIN … ON, ORDER BY an alias) so the
same text runs on Postgres and on the SQLite stand-in the tests use.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from types import MappingProxyType
from typing import Mapping

from ml_models.registry import FeatureRegistry, ModelSpec, WarehouseTable


@dataclass(frozen=True)
class TableRead:
    """What one warehouse table contributed to the training frame."""

    table: WarehouseTable
    columns: Mapping[str, str]  # training-frame column → source column of this table


@dataclass(frozen=True)
class TrainingQuery:
    sql: str
    reads: tuple[TableRead, ...]  # the label table first, then feature sources in feature order
    label_column: str


def key_column(key: str) -> str:
    return f"key__{key}"


def feature_column(feature: str) -> str:
    return f"feature__{feature}"


def label_column(column: str) -> str:
    return f"label__{column}"


def build_training_query(model: ModelSpec, registry: FeatureRegistry, before: datetime | None = None) -> TrainingQuery:
    """Join every feature's source table to the label table on the entity keys.

    ``before`` keeps only rows every table with a ``loaded_at`` column wrote
    before that instant: training on the data as it stood before a bad load.

    The label table drives the join (one row per labelled entity) and feature
    tables are LEFT JOINed: an entity whose features are missing is a data
    problem training must count, not one SQL should hide by dropping the row.
    Rows are ordered by key so a deterministic subsample stays deterministic on
    databases that return rows in arbitrary order.
    """
    order = [model.label.model] + [f.source.model for f in model.features]
    aliases = {name: f"t{i}" for i, name in enumerate(dict.fromkeys(order))}
    label_alias = aliases[model.label.model]
    # Every table is read on the entity keys it is joined by.
    contributed = {name: {key_column(k): k for k in model.keys} for name in aliases}

    select = [f"{label_alias}.{k} AS {key_column(k)}" for k in model.keys]
    for feature in model.features:
        column = feature_column(feature.name)
        select.append(f"{aliases[feature.source.model]}.{feature.source.column} AS {column}")
        contributed[feature.source.model][column] = feature.source.column
    label = label_column(model.label.column)
    select.append(f"{label_alias}.{model.label.column} AS {label}")
    contributed[model.label.model][label] = model.label.column

    joins = [f"FROM {registry.table(model.label.model).qualified_name} AS {label_alias}"]
    for name, alias in aliases.items():
        if alias == label_alias:
            continue
        on = " AND ".join(f"{alias}.{k} = {label_alias}.{k}" for k in model.keys)
        joins.append(f"LEFT JOIN {registry.table(name).qualified_name} AS {alias} ON {on}")
    order_by = ", ".join(key_column(k) for k in model.keys)
    where = loaded_before(aliases, registry, before)
    sql = "SELECT\n  " + ",\n  ".join(select) + "\n" + "\n".join(joins) + where + f"\nORDER BY {order_by}"

    return TrainingQuery(
        sql=sql,
        reads=tuple(
            TableRead(table=registry.table(name), columns=MappingProxyType(_unique_sources(columns)))
            for name, columns in contributed.items()
        ),
        label_column=label,
    )


def label_query(model: ModelSpec, registry: FeatureRegistry, before: datetime | None = None) -> str:
    """The labelled rows training asks the feature store about: entity keys and label, ordered by key."""
    table = registry.table(model.label.model)
    select = [f"t0.{k} AS {key_column(k)}" for k in model.keys]
    select.append(f"t0.{model.label.column} AS {label_column(model.label.column)}")
    where = loaded_before({model.label.model: "t0"}, registry, before)
    order_by = ", ".join(key_column(k) for k in model.keys)
    return ("SELECT\n  " + ",\n  ".join(select) + f"\nFROM {table.qualified_name} AS t0" + where
            + f"\nORDER BY {order_by}")


def loaded_before(aliases: Mapping[str, str], registry: FeatureRegistry, before: datetime | None) -> str:
    """``WHERE`` every aliased table with a ``loaded_at`` column wrote its row before ``before`` (or nothing)."""
    cutoffs = [
        f"{alias}.{registry.table(name).loaded_at} < TIMESTAMP WITH TIME ZONE '{before.isoformat()}'"
        for name, alias in aliases.items() if before is not None and registry.table(name).loaded_at
    ]
    return "\nWHERE " + " AND ".join(cutoffs) if cutoffs else ""


def count_query(table: WarehouseTable) -> str:
    """Row count of a whole input table, recorded so volume at training time is known later."""
    return f"SELECT COUNT(*) AS row_count FROM {table.qualified_name}"


def _unique_sources(columns: dict[str, str]) -> dict[str, str]:
    """Keep one frame column per source column (a key may also feed a derived feature)."""
    seen: set[str] = set()
    unique = {}
    for frame_column, source in columns.items():
        if source not in seen:
            seen.add(source)
            unique[frame_column] = source
    return unique
