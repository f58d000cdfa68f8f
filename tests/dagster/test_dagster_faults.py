"""Dagster under faults, with DataHub's GMS failing at the HTTP boundary, on the SQLite instance storage of
``dagster dev`` and on the Postgres storage (``dagster-postgres``) of a production deployment.

A scan whose write-back failed part-way is re-executed from the failure: only
the write-back step runs again, on the findings the failed run computed, and
DataHub ends exactly where one uninterrupted scan leaves it, each write once.
A sensor tick that fails is a failed tick in the daemon: its cursor stays where
it was, and the next tick launches the rescan the failed one could not.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any, Iterator

import pytest
from dagster import (
    DagsterInstance,
    JobDefinition,
    ReexecutionOptions,
    build_sensor_context,
    execute_job,
    instance_for_test,
    reconstructable,
)
from dagster._core.scheduler.instigation import TickStatus
from dagster._core.test_utils import create_test_daemon_workspace_context, freeze_time, load_remote_repo
from dagster._core.workspace.load_target import ModuleTarget
from dagster._daemon.sensor import execute_sensor_iteration
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata import schema_classes as m

from recall_dagster.defs import recall_definitions
from recall_dagster.errors import ServiceUnreachable
from recall_dagster.graph import GmsGraph
from tests.cutting import free_port
from tests.writeback.wb_support import BREAK, HEALTHY, WritebackGms, gms_estate

pytestmark = pytest.mark.slow  # real runs and daemon ticks on two instance storages, about a minute and a half

ROOT = Path(__file__).resolve().parents[2]
ASSERTION = "urn:li:assertion:user-stats-not-null"
USER_STATS = "urn:li:dataset:(urn:li:dataPlatform:bigquery,proj.features.user_stats,PROD)"
FAST_RETRIES = "writeback:\n  retry: {attempts: 1, backoff_seconds: 0, max_backoff_seconds: 0}\n"


def scan_job() -> JobDefinition:
    """The ``recall_scan`` job as the code location builds it, from the environment (reconstructable)."""
    return recall_definitions().resolve_job_def("recall_scan")


def point_at(server: WritebackGms, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = home / "recall.yaml"
    home.mkdir(parents=True, exist_ok=True)
    config.write_text(FAST_RETRIES)
    monkeypatch.setenv("RECALL_HOME", str(home))
    monkeypatch.setenv("RECALL_GRAPH", server.url)
    monkeypatch.setenv("RECALL_CONFIG", str(config))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)


def failing_result(at_ms: int) -> MetadataChangeProposalWrapper:
    """A new failing result of the estate's dbt-style not-null test on a table production models read."""
    return MetadataChangeProposalWrapper(entityUrn=ASSERTION, aspect=m.AssertionRunEventClass(
        timestampMillis=at_ms, runId="dbt-run-9", asserteeUrn=USER_STATS, assertionUrn=ASSERTION,
        status=m.AssertionRunStatusClass.COMPLETE, result=m.AssertionResultClass(type=m.AssertionResultTypeClass.FAILURE),
    ))


def written(server: WritebackGms) -> Counter:
    return Counter((urn, aspect) for urn, aspect, _ in server.landed)


def steps(result) -> set[str]:  # noqa: ANN001 - an ExecutionResult
    return {event.step_key for event in result.all_events if event.event_type_value == "STEP_START"}


def test_a_scan_whose_write_back_failed_part_way_is_reexecuted_from_the_failure_exactly_once(
    storage: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with gms_estate(HEALTHY, BREAK) as reference:
        point_at(reference, tmp_path / "reference", monkeypatch)
        with instance_for_test() as instance:
            assert scan_job().execute_in_process(instance=instance).success
        once = written(reference)

    with gms_estate(HEALTHY, BREAK) as estate_gms, instance_for_test(overrides=storage) as instance:
        assert type(instance.run_storage).__name__ == ("PostgresRunStorage" if storage else "SqliteRunStorage")
        point_at(estate_gms, tmp_path / "home", monkeypatch)
        estate_gms.fail_writes_after = 1
        with execute_job(reconstructable(scan_job), instance, raise_on_error=False) as failed:
            assert not failed.success
            assert [e.step_key for e in failed.get_step_failure_events()] == ["datahub_writeback"]
            landed_before = sum(written(estate_gms).values())
            assert landed_before > 0, "part of the write-back landed before the server failed"
        estate_gms.fail_writes_after, estate_gms.fail_writes = None, False
        options = ReexecutionOptions.from_failure(failed.run_id, instance)
        with execute_job(reconstructable(scan_job), instance, reexecution_options=options) as again:
            assert again.success
            assert steps(again) == {"datahub_writeback"}, "only the failed step runs again, on the stored findings"
        twice = written(estate_gms)
    assert set(twice) == set(once), "DataHub ends where one uninterrupted scan leaves it"
    assert [key for key, count in twice.items() if count > once[key]] == [], "no write lands twice"


class SensorDaemon:
    """Dagster's own sensor daemon over the ``recall`` code location, loaded in its own process as ``dagster
    dev`` does, driven one iteration at a time at chosen instants."""

    def __init__(self, workspace: Any, instance: DagsterInstance, name: str) -> None:
        self.workspace, self.instance = workspace, instance
        self.sensor = load_remote_repo(workspace, "__repository__").get_sensor(name)

    def tick(self, at: float) -> Any:
        """One daemon iteration at ``at``; the sensor's newest tick."""
        with freeze_time(at):
            list(execute_sensor_iteration(self.workspace, logging.getLogger("sensor-daemon"), None, None))
        return self.instance.get_ticks(self.sensor.get_remote_origin_id(), self.sensor.selector_id)[0]

    def cursor(self) -> str | None:
        state = self.instance.get_instigator_state(self.sensor.get_remote_origin_id(), self.sensor.selector_id)
        return state.instigator_data.cursor if state and state.instigator_data else None


@contextmanager
def sensor_daemon(instance: DagsterInstance, name: str) -> Iterator[SensorDaemon]:
    target = ModuleTarget("recall_dagster.definitions", None, str(ROOT), "recall")
    with create_test_daemon_workspace_context(target, instance) as workspace:
        yield SensorDaemon(workspace, instance, name)


def test_a_failed_sensor_tick_keeps_its_cursor_and_the_next_tick_launches_the_rescan(
    storage: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    queued = {**storage,
              "run_coordinator": {"module": "dagster._core.run_coordinator", "class": "QueuedRunCoordinator"}}
    with gms_estate(HEALTHY) as server, instance_for_test(overrides=queued) as instance:
        assert type(instance.schedule_storage).__name__ == ("PostgresScheduleStorage" if storage else "SqliteScheduleStorage")
        point_at(server, tmp_path / "home", monkeypatch)
        start = time.time()
        with sensor_daemon(instance, "datahub_assertion_results") as daemon:
            watching = daemon.tick(start)
            assert watching.status == TickStatus.SKIPPED and daemon.cursor()
            cursor = daemon.cursor()

            with closing(GmsGraph(server.url, retries=0)) as graph:  # dbt's test fails on a table a model reads
                assert graph.emit_mcps([failing_result(int(start * 1000))]).ok
            server.fail_every = 1  # GMS answers every read with a 503
            failed = daemon.tick(start + 61)
            assert failed.status == TickStatus.FAILURE and f"DataHub GMS at {server.url}" in str(failed.error)
            assert daemon.cursor() == cursor and not instance.get_runs(), "a failed tick moves nothing"

            server.fail_every = 0
            launched = daemon.tick(start + 122)
            assert launched.status == TickStatus.SUCCESS and daemon.cursor() != cursor
            [run] = instance.get_runs()
            assert run.tags["recall/trigger"] == "datahub_assertion" and run.tags["recall/models"]

            quiet = daemon.tick(start + 183)
            assert quiet.status == TickStatus.SKIPPED and len(instance.get_runs()) == 1, "handled once"


def test_the_mlflow_sensor_fails_its_tick_naming_mlflow_when_the_registry_does_not_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with gms_estate() as server:
        point_at(server, tmp_path / "home", monkeypatch)
    (tmp_path / "home" / "recall.yaml").write_text("impact:\n  registry: {timeout_seconds: 2, retries: 0}\n")
    registry = f"http://127.0.0.1:{free_port()}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", registry)
    defs = recall_definitions()
    with build_sensor_context(cursor="1", definitions=defs, resources=defs.resources) as context:
        with pytest.raises(ServiceUnreachable, match=f"MLflow at {registry} did not answer while listing model"):
            defs.resolve_sensor_def("mlflow_new_versions")(context)
