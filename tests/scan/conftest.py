"""Fixtures for the scan tests: config and private copies of ingested estates."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from scan_estates import ingest

from recall_dagster.detect import ScanConfig
from recall_dagster.config.load import load


@pytest.fixture(scope="session")
def config() -> ScanConfig:
    return load().scan


@pytest.fixture(scope="session")
def _estate_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("estates")
    return {
        "general": ingest(root / "general.db", "estate_general.json"),
        "healthy": ingest(root / "healthy.db", "estate_healthy.json"),
        "sparse": ingest(root / "sparse.db", "estate_sparse.json"),
    }


@pytest.fixture
def estate(_estate_files: dict[str, Path], tmp_path: Path):
    """A private copy of an ingested estate: ``estate("general")`` is the path of a Lite file."""

    def copy(name: str) -> Path:
        target = tmp_path / f"{name}.db"
        shutil.copyfile(_estate_files[name], target)
        return target

    return copy
