"""Definitions built on a private RECALL_HOME, once per session: the dbt manifest is parsed there; and the
instance storages a deployment keeps Dagster's state in.

``definitions`` is the demo estate with Recall merged in (one location, as the
in-process runs need); ``recall_defs`` is Recall's own location alone;
``storage`` is SQLite (``dagster dev``) or Postgres (``dagster-postgres``).
"""

from __future__ import annotations


from dataclasses import replace
from typing import Iterator

import pytest
from dagster import Definitions, instance_for_test

from recall_dagster.defs import RecallResource, recall_definitions
from recall_dagster.settings import Settings
from seed.dagster.definitions import build_definitions
from seed.stack.warehouse import ensure_warehouse, stop_warehouse


@pytest.fixture(scope="session")
def defs_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return Settings.under(tmp_path_factory.mktemp("recall_home"))


@pytest.fixture(scope="session")
def definitions(defs_settings: Settings) -> Definitions:
    return build_definitions(defs_settings, with_recall=True)


@pytest.fixture(scope="session")
def recall_defs(defs_settings: Settings) -> Definitions:
    return recall_definitions(RecallResource.from_settings(defs_settings))


@pytest.fixture(scope="session")
def postgres_storage(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    """Instance storage in a database of an embedded PostgreSQL, as ``dagster-postgres`` keeps it in production."""
    settings = Settings.under(tmp_path_factory.mktemp("dagster-pg"))
    warehouse = ensure_warehouse(settings)
    conn = warehouse.connect()
    conn.autocommit = True
    with conn.cursor() as cursor:
        cursor.execute("CREATE DATABASE dagster")
    conn.close()
    try:
        # dagster-postgres brings psycopg2 and hands the URL to SQLAlchemy, which (2.1) opens a URL naming no
        # driver with psycopg: a deployment on SQLAlchemy 2.1 names the driver, as this does.
        url = replace(warehouse, database="dagster").url.replace("postgresql://", "postgresql+psycopg2://", 1)
        yield {"storage": {"postgres": {"postgres_url": url}}}
    finally:
        stop_warehouse(settings)


@pytest.fixture(params=["sqlite", "postgres"])
def storage(request: pytest.FixtureRequest) -> dict:
    """Dagster's instance storage: the SQLite of ``dagster dev``, or Postgres (wiped for each test)."""
    if request.param == "sqlite":
        return {}
    overrides = request.getfixturevalue("postgres_storage")
    with instance_for_test(overrides=overrides) as instance:
        instance.wipe()
        instance.wipe_all_schedules()
    return overrides
