"""Definitions built on a private RECALL_HOME, once per session: the dbt manifest is parsed there."""

from __future__ import annotations


import pytest
from dagster import Definitions

from recall_dagster.defs import build_definitions
from recall_dagster.settings import Settings


@pytest.fixture(scope="session")
def defs_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return Settings.under(tmp_path_factory.mktemp("recall_home"))


@pytest.fixture(scope="session")
def definitions(defs_settings: Settings) -> Definitions:
    return build_definitions(defs_settings)
