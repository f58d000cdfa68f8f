"""The demo's Feast repository on the embedded stack: served from the warehouse, kept under RECALL_HOME."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
import sqlalchemy

from ml_models.feature_store import ServedRepository, serve
from ml_models.registry import FeatureRegistry
from recall_dagster.errors import StackError
from recall_dagster.read_only_sql import sql_connection
from recall_dagster.settings import Settings
from seed.stack.warehouse import Warehouse


def feast_repo(settings: Settings) -> Path:
    return settings.home / "feast"


def serve_features(settings: Settings, registry: FeatureRegistry, warehouse: Warehouse) -> ServedRepository:
    """Feast serves every feature table of ``registry``; an online value that differs from the export is an
    error, since the demo's serving path would then not be what Feast serves."""
    with sql_connection(warehouse.url) as conn:
        served = serve(feast_repo(settings), registry, lambda q: pd.read_sql(sqlalchemy.text(q), conn),
                       datetime.now(timezone.utc))
    if served.mismatches:
        shown = "; ".join(served.mismatches[:3])
        raise StackError(f"Feast at {served.repo} serves values its export does not hold: {shown}")
    return served
