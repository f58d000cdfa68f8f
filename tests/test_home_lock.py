"""Writers of one store take turns; one that cannot get its turn stops before writing, with exit 3. Writers of
different stores, and scans that only replace whole records, never wait on one another. Two commands starting
together on one empty RECALL_HOME never fail."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from recall_dagster.kept.baselines import JsonStateStore
from recall_dagster.cli import cli
from recall_dagster.errors import EXIT_UNREACHABLE, ServiceUnreachable
from recall_dagster.files import locked
from recall_dagster.graph import LiteGraph
from recall_dagster.settings import Settings


def test_a_second_writer_waits_for_the_first(tmp_path: Path) -> None:
    order: list[str] = []
    lock = tmp_path / "writeback.lock"

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
    impatient = replace(Settings.under(tmp_path), lock_wait_seconds=0.2)
    with impatient.writing("writeback", "datahub_writeback"):
        with pytest.raises(ServiceUnreachable, match="recall scan --write is busy: another process has held") as caught:
            with impatient.writing("writeback", "recall scan --write"):
                pass
    assert caught.value.exit_code == EXIT_UNREACHABLE


def test_writers_of_different_stores_do_not_wait_for_each_other(tmp_path: Path) -> None:
    impatient = replace(Settings.under(tmp_path), lock_wait_seconds=0)
    with impatient.writing("writeback", "a write-back"), impatient.writing("incidents", "an incident sync"):
        JsonStateStore(impatient.state_dir).save_baselines({"urn:li:dataset:x": {"id": "int"}})
    assert JsonStateStore(impatient.state_dir).load_baselines() == {"urn:li:dataset:x": {"id": "int"}}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A home holding an empty DataHub Lite graph."""
    home = tmp_path / "home"
    LiteGraph(home / "datahub.db").close()
    return home


def test_a_write_back_started_while_another_holds_its_store_exits_3_and_writes_nothing(home: Path) -> None:
    env = {**os.environ, "RECALL_HOME": str(home), "RECALL_LOCK_WAIT_SECONDS": "0.5"}
    env.pop("RECALL_GRAPH", None)
    with replace(Settings.under(home), lock_wait_seconds=0).writing("writeback", "the first write-back"):
        done = subprocess.run([str(Path(sys.executable).with_name("recall")), "scan", "--write"], env=env,
                              capture_output=True, text=True, timeout=120)
    assert done.returncode == EXIT_UNREACHABLE, done.stderr
    assert "recall scan --write is busy" in done.stderr and not (home / "state").exists()


def test_a_scan_that_writes_nothing_back_runs_beside_a_write_back(home: Path) -> None:
    with replace(Settings.under(home), lock_wait_seconds=0).writing("writeback", "the nightly write-back"):
        done = CliRunner().invoke(cli, ["scan", "--json"], env={"RECALL_HOME": str(home),
                                                               "RECALL_LOCK_WAIT_SECONDS": "0", "RECALL_GRAPH": ""})
    assert done.exit_code == 0, done.output
    assert json.loads(done.output)["models"] == []


def _start(home: Path, ready: "multiprocessing.synchronize.Barrier", failures: "multiprocessing.Queue[str]",
           rounds: int, who: int) -> None:
    """What every command does first on its home, ``rounds`` times on a new empty home each, in step with the
    other process: the write probe, a store's turn, a record laid over whatever the other wrote."""
    for n in range(rounds):
        settings = replace(Settings.under(home / str(n)), lock_wait_seconds=30)
        ready.wait(timeout=60)
        try:
            with settings.writing("writeback", f"process {who}"):
                JsonStateStore(settings.state_dir).save_baselines({f"urn:li:dataset:{who}": {"id": "int"}})
        except Exception as err:  # noqa: BLE001 - any failure at all is what this test counts
            failures.put(f"round {n}, process {who}: {err!r}")


def starting_together(tmp_path: Path, rounds: int) -> None:
    context = multiprocessing.get_context("spawn")  # a new interpreter each, as two commands are
    ready, failures = context.Barrier(2), context.Queue()
    processes = [context.Process(target=_start, args=(tmp_path, ready, failures, rounds, who)) for who in (0, 1)]
    for p in processes:
        p.start()
    for p in processes:
        p.join(timeout=600)
    assert [p.exitcode for p in processes] == [0, 0]
    found = [failures.get() for _ in range(failures.qsize())]
    assert found == [], found[:3]
    for n in range(rounds):
        kept = JsonStateStore(Settings.under(tmp_path / str(n)).state_dir).load_baselines()
        assert set(kept) == {"urn:li:dataset:0", "urn:li:dataset:1"}, f"round {n} lost a writer's record"
        assert not [p.name for p in (tmp_path / str(n)).iterdir() if p.name.startswith(".write-probe")]


@pytest.mark.slow  # starts real processes for seconds each: `make test-slow`
def test_two_processes_starting_on_one_empty_home_never_fail(tmp_path: Path) -> None:
    starting_together(tmp_path, 1000)
