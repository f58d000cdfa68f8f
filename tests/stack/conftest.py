"""One embedded warehouse per test session, in a throwaway RECALL_HOME."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest
from stack_homes import fresh_settings

from recall_dagster.settings import Settings
from seed.stack.warehouse import Warehouse, ensure_warehouse, stop_warehouse


@pytest.fixture(scope="session")
def stack_settings() -> Iterator[Settings]:
    settings = fresh_settings("recall-stack-")
    yield settings
    stop_warehouse(settings)
    shutil.rmtree(settings.home, ignore_errors=True)


@pytest.fixture(scope="session")
def warehouse(stack_settings: Settings) -> Warehouse:
    return ensure_warehouse(stack_settings)
