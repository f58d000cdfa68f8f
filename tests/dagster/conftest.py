"""Definitions built on a private RECALL_HOME, once per session: the dbt manifest is parsed there.

``definitions`` is the demo estate with Recall merged in (one location, as the
in-process runs need); ``recall_defs`` is Recall's own location alone.
"""

from __future__ import annotations


import pytest
from dagster import Definitions

from recall_dagster.defs import RecallResource, recall_definitions
from recall_dagster.settings import Settings
from seed.dagster.definitions import build_definitions


@pytest.fixture(scope="session")
def defs_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return Settings.under(tmp_path_factory.mktemp("recall_home"))


@pytest.fixture(scope="session")
def definitions(defs_settings: Settings) -> Definitions:
    return build_definitions(defs_settings, with_recall=True)


@pytest.fixture(scope="session")
def recall_defs(defs_settings: Settings) -> Definitions:
    return recall_definitions(RecallResource.from_settings(defs_settings))
