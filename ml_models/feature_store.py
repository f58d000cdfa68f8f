"""The demo's Feast repository: one feature view per registry feature table, served from the warehouse.

Each feature table is exported from the dbt marts to a parquet file (Feast's
file offline store), applied to a Feast registry, and its newest rows are
materialised into a SQLite online store under ``RECALL_HOME``. A small serving
check then reads features back online, so the demo's serving path is what Feast
actually serves. Feast itself runs in its own environment (:mod:`ml_models.feast_env`). The export is also what DataHub's feast source describes: each
feature's source dataset is the file, and the feature's values are typed exactly
as training fits on them (:func:`typed_feature`).

Training reads the same views back point in time (:mod:`ml_models.historical`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Callable, Mapping

import pandas as pd
import yaml

from ml_models.feast_env import run_feast
from ml_models.fit import CATEGORICAL_TYPES, TrainingDataError
from ml_models.query import loaded_before
from ml_models.registry import Feature, FeatureRegistry, FeatureTable
from ml_models.transforms import TRANSFORMS

ReadSql = Callable[[str], pd.DataFrame]

PROJECT = "recall"
TIMESTAMP = "feature_timestamp"  # the event-time column of every export
FEATURE_REFS = "feature_refs"  # the MLflow run parameter naming the feature references training read
ONLINE_WINDOW = timedelta(days=1)  # how far back from a view's newest row the online store is loaded
SAMPLE_ROWS = 20  # online rows the serving check reads back per view


@dataclass(frozen=True)
class ExportColumn:
    """One column of a feature table's export and the warehouse column it is read from."""

    name: str
    table: str  # registry warehouse table
    column: str


@dataclass(frozen=True)
class ServingCheck:
    view: str
    rows_exported: int
    rows_online: int  # rows materialised into the online store
    rows_checked: int
    mismatches: tuple[str, ...]  # "<key>: <feature> served <online>, exported <expected>"


@dataclass(frozen=True)
class ServedRepository:
    repo: Path
    checks: tuple[ServingCheck, ...]
    removed: tuple[str, ...]  # feature views Feast no longer serves because the registry dropped them

    @property
    def mismatches(self) -> tuple[str, ...]:
        return tuple(f"{c.view} {m}" for c in self.checks for m in c.mismatches)


def source_path(view: str) -> str:
    """Where a view's export lives, relative to the repository: Feast resolves it there, and DataHub's feast
    source names the dataset after it (``data.<view>.parquet``) whatever the repository's location."""
    return f"data/{view}.parquet"


def feature_ref(table: str, feature: str) -> str:
    """Feast's reference to a feature, ``view:feature``: what training logs and serving requests."""
    return f"{table}:{feature}"


def export_columns(table: FeatureTable) -> tuple[ExportColumn, ...]:
    """Entity keys (from the table's home), then every feature under its own name."""
    keys = tuple(ExportColumn(key, table.home, key) for key in table.keys)
    return keys + tuple(ExportColumn(f.name, f.source.model, f.source.column) for f in table.features)


def export_sql(table: FeatureTable, registry: FeatureRegistry, before: datetime | None = None) -> str:
    """The home table LEFT JOINed to every other table a feature reads, on the entity keys.

    Without an event-time column the export is a snapshot: its stamp is added
    when the frame is built, so the SQL stays the same on every warehouse.
    ``before`` exports the offline store as it stood then: rows every table with a
    ``loaded_at`` column wrote before that instant.
    """
    columns = export_columns(table)
    aliases = {name: f"t{i}" for i, name in enumerate(dict.fromkeys(c.table for c in columns))}
    home = aliases[table.home]
    select = [f"{aliases[c.table]}.{c.column} AS {c.name}" for c in columns]
    if table.event_time is not None:
        select.append(f"{home}.{table.event_time} AS {TIMESTAMP}")
    joins = [f"FROM {registry.table(table.home).qualified_name} AS {home}"]
    for name, alias in aliases.items():
        if alias != home:
            on = " AND ".join(f"{alias}.{k} = {home}.{k}" for k in table.keys)
            joins.append(f"LEFT JOIN {registry.table(name).qualified_name} AS {alias} ON {on}")
    order = ", ".join(f"{home}.{k}" for k in table.keys)
    return ("SELECT\n  " + ",\n  ".join(select) + "\n" + "\n".join(joins)
            + loaded_before(aliases, registry, before) + f"\nORDER BY {order}")


def export_frame(table: FeatureTable, raw: pd.DataFrame, now: datetime) -> pd.DataFrame:
    """The rows Feast serves: keys as text (Feast's STRING join keys), features typed as training types
    them, and a UTC stamp (the event time, or ``now`` for a snapshot)."""
    frame = pd.DataFrame({key: raw[key].astype(str) for key in table.keys})
    for feature in table.features:
        frame[feature.name] = typed_feature(raw[feature.name], feature, f"feature view {table.name}")
    stamps = raw[TIMESTAMP] if table.event_time is not None else pd.Series(now, index=raw.index)
    frame[TIMESTAMP] = utc_stamps(stamps)
    return frame


def typed_feature(values: pd.Series, feature: Feature, where: str) -> pd.Series:
    """A feature's values as the feature store serves them and training fits on them: numeric as float64,
    categories as text. ``where`` names what is typing them in an error."""
    try:
        if feature.transform is not None:
            values = TRANSFORMS[feature.transform](values)
        if feature.data_type in CATEGORICAL_TYPES:
            return values.where(values.isna(), values.astype(str)).astype(object)
        return pd.to_numeric(values).astype("float64")
    except (TypeError, ValueError) as err:
        source = f"{feature.source.model}.{feature.source.column}"
        raise TrainingDataError(
            f"{where}: feature {feature.name} ({source}, {feature.data_type}) "
            f"holds values training cannot use: {err}"
        ) from None


def utc_stamps(values: pd.Series) -> pd.Series:
    """Timestamps as Feast compares them: UTC, in microseconds (a zone-less one is taken as UTC)."""
    return pd.to_datetime(values, utc=True).astype("datetime64[us, UTC]")


@dataclass(frozen=True)
class Export:
    """One feature view's rows: as the warehouse returned them, and as Feast serves them."""

    raw: pd.DataFrame
    frame: pd.DataFrame


def export_views(
    repo: Path,
    tables: tuple[FeatureTable, ...],
    registry: FeatureRegistry,
    read_sql: ReadSql,
    now: datetime,
    before: datetime | None = None,
) -> dict[str, Export]:
    """Read each view from the warehouse and write its export where the view's source points."""
    write_config(repo)
    exports = {}
    for table in tables:
        raw = read_sql(export_sql(table, registry, before))
        exports[table.name] = Export(raw, export_frame(table, raw, now))
        path = repo / source_path(table.name)
        path.parent.mkdir(parents=True, exist_ok=True)
        exports[table.name].frame.to_parquet(path, index=False)
    return exports


def write_config(repo: Path) -> Path:
    """``feature_store.yaml``: a local provider, a file registry, the file offline store and SQLite online."""
    repo.mkdir(parents=True, exist_ok=True)
    path = repo / "feature_store.yaml"
    config = {
        "project": PROJECT,
        "provider": "local",
        "registry": "registry.db",
        "online_store": {"type": "sqlite", "path": "online.db"},
        "offline_store": {"type": "file"},
        "entity_key_serialization_version": 2,
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def serve(repo: Path, registry: FeatureRegistry, read_sql: ReadSql, now: datetime) -> ServedRepository:
    """Export, apply, materialise and read back every feature table of ``registry``; idempotent. Feast does its
    part in its own environment (:mod:`ml_models.feast_env`), in one job."""
    exports = export_views(repo, registry.feature_tables, registry, read_sql, now)
    windows = {table.name: _online_window(exports[table.name].frame) for table in registry.feature_tables}
    samples = {table.name: _sample(table, exports[table.name].frame, *windows[table.name])
               for table in registry.feature_tables}
    answer = run_feast({
        "repo": str(repo),
        "views": view_specs(registry.feature_tables, exports),
        "delete_others": True,
        "materialize": [{"view": name, "start": start.isoformat(), "end": end.isoformat()}
                        for name, (start, end) in windows.items()],
        "online": [{"features": [feature_ref(table.name, f.name) for f in table.features],
                    "entity_rows": [{k: row[k] for k in table.keys} for row in samples[table.name][1]]}
                   for table in registry.feature_tables],
    })
    checks = tuple(
        _check(table, exports[table.name].frame, *samples[table.name], served)
        for table, served in zip(registry.feature_tables, answer["online"])
    )
    return ServedRepository(repo=repo, checks=checks, removed=tuple(answer["removed"]))


def view_specs(tables: tuple[FeatureTable, ...], exports: Mapping[str, Export]) -> list[dict[str, Any]]:
    """The feature views Feast is to apply, one per table over its export, as :mod:`ml_models.feast_worker`
    reads them: string entity keys, each feature a Float64 or a String as the export holds it."""
    return [
        {
            "name": table.name,
            "keys": list(table.keys),
            "features": [{"name": f.name, "description": f.description,
                          "dtype": "Float64" if exports[table.name].frame[f.name].dtype == "float64" else "String"}
                         for f in table.features],
            "source": source_path(table.name),
            "timestamp_field": TIMESTAMP,
            "description": table.description,
            "owner": table.owners[0].id if table.owners else "",
        }
        for table in tables
    ]


def _online_window(frame: pd.DataFrame) -> tuple[datetime, datetime]:
    """The newest day of the view, as Feast's materialisation window (which excludes its end)."""
    end = frame[TIMESTAMP].max().to_pydatetime() + timedelta(seconds=1)
    return end - ONLINE_WINDOW - timedelta(seconds=1), end


def _sample(table: FeatureTable, frame: pd.DataFrame, start: datetime, end: datetime
            ) -> tuple[int, list[dict[str, Any]]]:
    """Rows the online store holds after the window is loaded (the newest of each entity), and the first
    ``SAMPLE_ROWS`` of them by key, which the serving check reads back."""
    window = frame[(frame[TIMESTAMP] >= start) & (frame[TIMESTAMP] < end)]
    latest = window.sort_values(TIMESTAMP).drop_duplicates(list(table.keys), keep="last")
    return len(latest), latest.sort_values(list(table.keys)).head(SAMPLE_ROWS).to_dict("records")


def _check(table: FeatureTable, frame: pd.DataFrame, online_rows: int, sample: list[dict[str, Any]],
           served: Mapping[str, list[Any]]) -> ServingCheck:
    """The sample as Feast served it online, compared with the export."""
    names = [f.name for f in table.features]
    mismatches = []
    for i, row in enumerate(sample):
        for name in names:
            if not _same(served[name][i], row[name]):
                key = ",".join(str(row[k]) for k in table.keys)
                mismatches.append(f"{key}: {name} served {served[name][i]!r}, exported {row[name]!r}")
    return ServingCheck(table.name, len(frame), online_rows, len(sample), tuple(mismatches))


def _same(online: Any, exported: Any) -> bool:
    if _missing(online) or _missing(exported):
        return _missing(online) and _missing(exported)
    if isinstance(exported, float):
        return math.isclose(float(online), exported, rel_tol=1e-9, abs_tol=1e-12)
    return str(online) == str(exported)


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))
