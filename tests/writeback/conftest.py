"""Fixtures for the write-back tests: config without backoff waits, a private Lite estate, a fake GMS."""

from __future__ import annotations

import shutil
from contextlib import closing
from pathlib import Path
from typing import Iterator

import pytest
from wb_support import BREAK, HEALTHY, WritebackGms, gms_estate, lite_estate

from recall_dagster.detect import ScanConfig
from recall_dagster.graph import GmsGraph, LiteGraph
from recall_dagster.config.load import load
from recall_dagster.settings import Settings
from recall_dagster.writeback.config import WritebackConfig, RetryPolicy


@pytest.fixture(scope="session")
def recall_config() -> ScanConfig:
    return load().scan


@pytest.fixture
def wb_config() -> WritebackConfig:
    """The shipped write-back config, retrying without waiting."""
    quick = RetryPolicy(attempts=4, backoff_seconds=0, max_backoff_seconds=0, budget_seconds=3600)
    return load().writeback.model_copy(update={"retry": quick})


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path / "home", graph=str(tmp_path / "graph.db"))


@pytest.fixture(scope="session")
def _broken_estate(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return lite_estate(tmp_path_factory.mktemp("estate") / "broken.db", HEALTHY, BREAK)


@pytest.fixture
def lite_path(_broken_estate: Path, settings: Settings) -> Path:
    """A private copy of the broken estate, where ``settings.graph`` points."""
    shutil.copyfile(_broken_estate, settings.graph)
    return Path(settings.graph)


@pytest.fixture
def lite(lite_path: Path) -> Iterator[LiteGraph]:
    with closing(LiteGraph(lite_path)) as graph:
        yield graph


@pytest.fixture
def fake() -> Iterator[WritebackGms]:
    with gms_estate(HEALTHY, BREAK) as server:
        yield server


@pytest.fixture
def gms(fake: WritebackGms) -> Iterator[GmsGraph]:
    with closing(GmsGraph(fake.url, retries=0)) as graph:
        yield graph
