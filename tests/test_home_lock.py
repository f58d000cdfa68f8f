"""Two writers of one RECALL_HOME take turns; one that cannot get its turn stops before writing, with exit 3."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from recall_dagster.errors import EXIT_UNREACHABLE, ServiceUnreachable
from recall_dagster.files import locked
from recall_dagster.settings import Settings


def test_a_second_writer_waits_for_the_first(tmp_path: Path) -> None:
    order: list[str] = []
    lock = tmp_path / ".recall.lock"

    def second() -> None:
        with locked(lock, "the second", wait_seconds=10):
            order.append("second")

    with locked(lock, "the first", wait_seconds=0):
        waiter = threading.Thread(target=second)
        waiter.start()
        time.sleep(0.3)
        order.append("first done")
    waiter.join(timeout=10)
    assert order == ["first done", "second"]


def test_a_writer_that_cannot_get_its_turn_is_refused_by_name(tmp_path: Path) -> None:
    with locked(tmp_path / ".recall.lock", "a scan", wait_seconds=0):
        with pytest.raises(ServiceUnreachable, match="recall scan is busy: another process has held") as caught:
            with replace(Settings.under(tmp_path), lock_wait_seconds=0.2).writing("recall scan"):
                pass
    assert caught.value.exit_code == EXIT_UNREACHABLE


def test_a_scan_started_while_another_holds_the_home_exits_3_and_writes_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "datahub.db").write_bytes(b"")
    env = {**os.environ, "RECALL_HOME": str(home), "RECALL_LOCK_WAIT_SECONDS": "0.5"}
    env.pop("RECALL_GRAPH", None)
    with locked(home / ".recall.lock", "the first scan", wait_seconds=0):
        done = subprocess.run([str(Path(sys.executable).with_name("recall")), "scan"], env=env,
                              capture_output=True, text=True, timeout=120)
    assert done.returncode == EXIT_UNREACHABLE, done.stderr
    assert "recall scan is busy" in done.stderr and not (home / "state").exists()
