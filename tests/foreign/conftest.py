"""An estate nobody here wrote: hand-written MCP JSON in the shapes of DataHub's own sources.

``fixtures/estate_stock.json`` holds what the dbt source (tables, column lineage,
a test as a CUSTOM ``dbt`` assertion), the mlflow source (a registered model,
versions with ``trainingJobs``, aliases and stage tags, no features, training
runs with the legacy ``inputs`` and with ``inputEdges``), the feast source
(a feature view and its features with sources) and the vertex and sagemaker
sources (endpoints recording the version they serve, listed under every version)
write. ``failing_run.json`` is the next dbt run, with the test failing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest
import yaml
from dagster import DagsterInstance, instance_for_test
from foreign_estate import FIXTURES, OVERLAY

from recall_dagster.settings import Settings
from tests.scan.scan_estates import ingest


@pytest.fixture
def shop(tmp_path: Path) -> Settings:
    db = ingest(tmp_path / "shop.db", str(FIXTURES / "estate_stock.json"))
    return Settings(home=tmp_path / "home", graph=str(db), mlflow_tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")


@pytest.fixture
def overlay(tmp_path: Path) -> str:
    path = tmp_path / "recall.yaml"
    path.write_text(yaml.safe_dump(OVERLAY))
    return str(path)


@pytest.fixture
def instance() -> Iterator[DagsterInstance]:
    with instance_for_test() as instance:
        yield instance
