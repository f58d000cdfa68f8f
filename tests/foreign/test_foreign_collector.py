"""A scan pauses Python's cycle collector for its bulk work (:mod:`recall_dagster.collector`), but never inside a
Dagster run: the run's process is Dagster's, and its memory management stays as Dagster set it."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest
from click.testing import CliRunner
from dagster import DagsterInstance

from recall_dagster.cli import cli
from recall_dagster.defs import RecallResource, recall_definitions
from recall_dagster.settings import Settings


@pytest.fixture
def collector(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What was asked of the collector: each disable and freeze."""
    asked: list[str] = []
    for name in ("disable", "freeze"):
        real = getattr(gc, name)
        monkeypatch.setattr(gc, name, lambda real=real, name=name: (asked.append(name), real())[1])
    return asked


def test_a_dagster_run_leaves_the_collector_alone_and_the_cli_pauses_it(
    shop: Settings, overlay: str, instance: DagsterInstance, collector: list[str],
) -> None:
    defs = recall_definitions(RecallResource.from_settings(shop, config_path=overlay))
    assert defs.resolve_job_def("recall_scan").execute_in_process(instance=instance).success
    assert collector == [] and gc.isenabled(), "the scan's stages ran in the run and left the collector as it was"

    done = CliRunner().invoke(cli, ["scan", "--json", "--graph", shop.graph, "--config", overlay],
                              env={"RECALL_HOME": str(Path(shop.home))})
    assert done.exit_code in (0, 1), done.output
    assert "disable" in collector and gc.isenabled(), "the CLI's scan pauses it, and turns it back on"
