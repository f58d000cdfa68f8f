"""Training's rows: the labels from the warehouse, their features from Feast's point-in-time join.

Training stages the feature repository as the registry it trains with defines
it (a scenario may change a feature's code for training alone, so the served
repository is not it): the model's views are exported from the warehouse as it
stands (or as it stood before ``before``), applied to a scratch repository, and
Feast is asked for each labelled row's features as of the moment its event
happened. A view with an event time answers as of that time; a snapshot has
no history and answers as of its export.

The moment of a labelled row is the event time of its entity in the view: that
needs one row per entity. A view holding several rows for one entity would make
the moment ambiguous, and training stops with the view named rather than guess.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Callable

import pandas as pd

from ml_models.feast_env import run_feast
from ml_models.feature_store import TIMESTAMP, Export, export_views, feature_ref, utc_stamps, view_specs
from ml_models.fit import TrainingDataError
from ml_models.query import feature_column, key_column, label_query
from ml_models.registry import FeatureRegistry, FeatureTable, ModelSpec

ReadSql = Callable[[str], pd.DataFrame]

ENTITY_TIMESTAMP = "event_timestamp"
ROW = "recall_row"  # the entity frame's row number, to put Feast's answers back in label order


@dataclass(frozen=True)
class TrainingRows:
    """The same rows twice, with the columns of the training query (``key__``, ``feature__``, ``label__``)."""

    served: pd.DataFrame  # features as Feast returned them: what the model is fitted on
    read: pd.DataFrame  # features as the warehouse holds them: what each input table is recorded with


def training_rows(
    model: ModelSpec,
    registry: FeatureRegistry,
    read_sql: ReadSql,
    now: datetime,
    before: datetime | None = None,
) -> TrainingRows:
    """Every labelled row of ``model`` with its features, read through Feast (one job in Feast's environment:
    :mod:`ml_models.feast_env`)."""
    labels = read_sql(label_query(model, registry, before)).reset_index(drop=True)
    views = {table.name: table for table in registry.feature_tables}
    tables = tuple(views[name] for name in model.feature_tables)
    with tempfile.TemporaryDirectory(prefix="recall-feast-") as tmp:
        repo = Path(tmp)
        exports = export_views(repo, tables, registry, read_sql, now, before)
        read = labels.copy()
        served = labels.copy()
        asks, rows = [], {}
        for table in tables:
            names = [f.name for f in model.features if f.feature_table == table.name]
            rows[table.name] = _entity_rows(table, labels, exports[table.name], now)
            entity = repo / f"entity.{table.name}.parquet"
            _entity_frame(table, rows[table.name]).to_parquet(entity, index=False)
            asks.append({"features": [feature_ref(table.name, n) for n in names], "entity_df": str(entity),
                         "out": str(repo / f"answer.{table.name}.parquet")})
        run_feast({"repo": str(repo), "views": view_specs(tables, exports), "historical": asks})
        for table, ask in zip(tables, asks):
            names = [f.name for f in model.features if f.feature_table == table.name]
            answers = _in_label_order(pd.read_parquet(ask["out"]), len(rows[table.name]), names)
            raw = rows[table.name][[feature_column(n) for n in names]]
            for name in names:
                read[feature_column(name)] = raw[feature_column(name)].to_numpy()
                served[feature_column(name)] = answers[name].to_numpy()
    return TrainingRows(served=served, read=read)


def _entity_rows(table: FeatureTable, labels: pd.DataFrame, export: Export, now: datetime) -> pd.DataFrame:
    """Each labelled row with its moment in ``table`` and the view's warehouse values for its entity."""
    keys = list(table.keys)
    view = pd.DataFrame({key_column(k): export.frame[k] for k in keys})
    duplicated = view.duplicated()
    if duplicated.any():
        example = ", ".join(f"{k}={v}" for k, v in zip(keys, view[duplicated].iloc[0]))
        raise TrainingDataError(
            f"feature view {table.name} holds several rows for one entity ({example}): the moment each label "
            "is for is ambiguous, so its features cannot be read point in time"
        )
    view[TIMESTAMP] = export.frame[TIMESTAMP]
    for feature in table.features:
        view[feature_column(feature.name)] = export.raw[feature.name].to_numpy()
    entity = pd.DataFrame({key_column(k): labels[key_column(k)].astype(str) for k in keys})
    rows = entity.merge(view, on=[key_column(k) for k in keys], how="left", validate="many_to_one")
    # A labelled entity the view lacks gets no features whatever the moment; the export's stamp will do.
    rows[TIMESTAMP] = rows[TIMESTAMP].fillna(utc_stamps(pd.Series([now])).iloc[0])
    return rows


def _entity_frame(table: FeatureTable, rows: pd.DataFrame) -> pd.DataFrame:
    """Feast's entity frame: the keys, each row's moment, and its row number."""
    entity = pd.DataFrame({k: rows[key_column(k)] for k in table.keys})
    entity[ENTITY_TIMESTAMP] = rows[TIMESTAMP]
    entity[ROW] = range(len(rows))
    return entity


def _in_label_order(answers: pd.DataFrame, count: int, names: list[str]) -> pd.DataFrame:
    """Feast's answers put back in label order, whatever order it answered in."""
    return answers.set_index(ROW).reindex(range(count))[names]
