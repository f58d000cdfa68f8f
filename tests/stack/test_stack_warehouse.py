"""The embedded warehouse starts once, is shared, stops on request; a team's Postgres is never managed."""

from __future__ import annotations

import shutil
import socket
from dataclasses import replace

import psutil
import pytest
from stack_homes import fresh_settings

from recall_dagster.errors import EXIT_UNREACHABLE, ServiceUnreachable
from recall_dagster.settings import Settings
from seed.stack.warehouse import Warehouse, ensure_warehouse, stop_warehouse

pytestmark = pytest.mark.stack


def test_running_warehouse_is_reused(stack_settings: Settings, warehouse: Warehouse) -> None:
    again = ensure_warehouse(stack_settings)
    assert again.pid == warehouse.pid and again.managed
    with warehouse.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT current_database(), current_setting('server_version_num')::int / 10000")
        assert cur.fetchone() == ("warehouse", 16)


def test_fresh_home_starts_stops_and_restarts() -> None:
    settings = fresh_settings("recall-pg-")
    try:
        first = ensure_warehouse(settings)
        assert psutil.pid_exists(first.pid)
        assert stop_warehouse(settings) is True
        assert not psutil.pid_exists(first.pid) or psutil.Process(first.pid).status() == psutil.STATUS_ZOMBIE
        assert stop_warehouse(settings) is False, "stopping a stopped warehouse is a no-op"
        second = ensure_warehouse(settings)
        assert second.pid != first.pid
        with second.connect() as conn, conn.cursor() as cur:
            cur.execute("SELECT 1")
    finally:
        stop_warehouse(settings)
        shutil.rmtree(settings.home, ignore_errors=True)


def test_unreachable_warehouse_url_names_the_host(stack_settings: Settings) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again when the block ends: nothing listens there
    settings = replace(stack_settings, warehouse_url=f"postgresql+psycopg2://analyst@127.0.0.1:{port}/analytics")
    with pytest.raises(ServiceUnreachable, match=f"127.0.0.1:{port}") as caught:
        ensure_warehouse(settings)
    assert caught.value.exit_code == EXIT_UNREACHABLE


def test_warehouse_url_is_used_and_never_stopped(stack_settings: Settings, warehouse: Warehouse) -> None:
    settings = replace(stack_settings, warehouse_url=warehouse.url)
    external = ensure_warehouse(settings)
    assert not external.managed and external.pid is None
    assert (external.host, external.port, external.database) == (warehouse.host, warehouse.port, "warehouse")
    assert stop_warehouse(settings) is False
    assert ensure_warehouse(stack_settings).pid == warehouse.pid
