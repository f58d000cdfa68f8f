"""A warehouse table as an MLflow dataset input: the one training input MLflow's own sources cannot name.

MLflow's dataset sources name files and artifacts (``local``), code, HTTP
URLs, Delta tables, Spark, Hugging Face and Unity Catalog volumes; none names
a table in a SQL warehouse. DataHub's mlflow source links a run's input to a
catalogued dataset only when the input's source type is a DataHub platform
name, and then names the upstream by the input's *name*. With MLflow's own
pandas dataset (``from_pandas(frame, source="shop.marts.orders")``) the input
stays a bare ``mlflow`` reference, which Recall ties to the one catalogued
table answering to that name (:mod:`recall_dagster.estate.lookup`), and names
in ``coverage`` when none or several do. :func:`warehouse_dataset` makes the
link exact: its source type is the warehouse's platform and its name the
table's DataHub name, so the mlflow source writes a COPY edge to that table.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from mlflow.data.dataset_source import DatasetSource
from mlflow.data.pandas_dataset import PandasDataset, from_pandas


class WarehouseTableSource(DatasetSource):
    """A table in a warehouse DataHub catalogues as ``platform`` (``postgres``, ``duckdb``, ``snowflake``)."""

    def __init__(self, platform: str, table: str) -> None:
        self.platform = platform
        self.table = table

    def _get_source_type(self) -> str:  # type: ignore[override]  # MLflow declares it a staticmethod
        return self.platform  # per instance: the type is the DataHub platform the input links to

    def load(self) -> Any:
        raise NotImplementedError(f"read {self.table} through the warehouse, not through MLflow")

    @staticmethod
    def _can_resolve(raw_source: Any) -> bool:
        return False  # built explicitly by warehouse_dataset, never guessed from a string

    @classmethod
    def _resolve(cls, raw_source: Any) -> WarehouseTableSource:
        raise NotImplementedError("WarehouseTableSource is built explicitly, never resolved")

    def to_dict(self) -> dict[str, Any]:
        return {"platform": self.platform, "table": self.table}

    @classmethod
    def from_dict(cls, source_dict: dict[Any, Any]) -> WarehouseTableSource:
        return cls(platform=source_dict["platform"], table=source_dict["table"])


def warehouse_dataset(frame: pd.DataFrame, platform: str, table: str, targets: str | None = None) -> PandasDataset:
    """The rows a training run read from ``table`` (its DataHub name, ``shop.marts.orders``), for
    ``mlflow.log_input``: DataHub's mlflow source links it to ``urn:li:dataset:(urn:li:dataPlatform:<platform>,
    <table>,PROD)``."""
    return from_pandas(frame, source=WarehouseTableSource(platform, table), name=table, targets=targets)
