"""The scan cut into shards in Dagster: partitions of ``shard_scans`` run apart, ``shard_merge`` launches the
scan once all hold one instant, and the merged scan is exactly one scan of the whole estate, on the SQLite
storage of ``dagster dev`` and on the Postgres storage of a production deployment.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from contextlib import closing
from datetime import datetime, timezone
from pathlib import Path

import pytest
from dagster import AssetKey, Definitions, DagsterInstance, build_schedule_context, build_sensor_context, instance_for_test
from dagster._core.execution.backfill import PartitionBackfill
from dagster._core.storage.tags import BACKFILL_ID_TAG

from recall_dagster.defs import RecallResource, recall_definitions
from recall_dagster.graph import LiteGraph
from recall_dagster.config.load import load
from recall_dagster.impact.measured import mlflow_measure
from recall_dagster.instants import iso_instant
from recall_dagster.kept.baselines import JsonStateStore
from recall_dagster.scan import gather, run_scan
from recall_dagster.settings import Settings
from recall_dagster.shard_parts import ShardParts
from tests.scan.detector_spy import count_detector_runs, volatile_detectors
from tests.scan.scan_estates import SCAN_AT_MS, ingest

SHARDS = 3
KEYS = [f"{i}-of-{SHARDS}" for i in range(SHARDS)]


@pytest.fixture(scope="module")
def general(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return ingest(tmp_path_factory.mktemp("estate") / "general.db", "estate_general.json")


def location(home: Path, graph: Path, shards: int = SHARDS) -> Definitions:
    settings = Settings(home=home, graph=str(graph))
    return recall_definitions(RecallResource.from_settings(settings),
                              load().dagster.model_copy(update={"scan_shards": shards}))


def merge_tick(defs: Definitions, instance: DagsterInstance, cursor: str | None):  # noqa: ANN201 - a SensorResult
    with build_sensor_context(instance=instance, cursor=cursor, definitions=defs, resources=defs.resources) as ctx:
        return defs.resolve_sensor_def("shard_merge")(ctx)


def scan_json(result) -> dict:  # noqa: ANN001 - a ScanResult
    return {k: v for k, v in result.contract().as_json().items() if k not in ("resolve", "graph")}


def test_the_nightly_shards_merge_into_exactly_one_scan(
    general: Path, storage: dict, tmp_path: Path
) -> None:
    reference = shutil.copyfile(general, tmp_path / "reference.db")
    home = Settings(home=tmp_path / "one", graph=str(reference))
    with closing(LiteGraph(reference)) as graph:  # as `recall scan --as-of` does: detect, then replay on the models
        one_scan = run_scan(graph, load().scan, JsonStateStore(tmp_path / "one"), scanned_at_ms=SCAN_AT_MS,
                            measure=mlflow_measure(home, load().lifecycle, load().impact))
    graph_file = shutil.copyfile(general, tmp_path / "general.db")
    defs = location(tmp_path / "home", graph_file)
    with instance_for_test(overrides=storage) as instance:
        tick = datetime.fromtimestamp(SCAN_AT_MS / 1000, tz=timezone.utc)
        with build_schedule_context(instance=instance, scheduled_execution_time=tick,
                                    repository_def=defs.get_repository_def()) as ctx:
            requests = defs.resolve_schedule_def("nightly_scan").evaluate_tick(ctx).run_requests
        assert [r.partition_key for r in requests] == KEYS
        assert {r.run_config["ops"]["shard_scans"]["config"]["scanned_at"] for r in requests} == {
            iso_instant(SCAN_AT_MS)}, "every shard of the tick judges freshness at the tick's instant"

        shards = defs.resolve_job_def("recall_scan_shards")
        for request in requests:
            waiting = merge_tick(defs, instance, None)
            assert not waiting.run_requests and request.partition_key in waiting.skip_reason.skip_message
            assert shards.execute_in_process(run_config=request.run_config, partition_key=request.partition_key,
                                             instance=instance).success
        assert instance.get_materialized_partitions(AssetKey("shard_scans")) == set(KEYS)

        ready = merge_tick(defs, instance, None)
        assert len(ready.run_requests) == 1 and ready.cursor == str(SCAN_AT_MS)
        again = merge_tick(defs, instance, ready.cursor)
        assert not again.run_requests and "are merged" in again.skip_reason.skip_message, "one set of parts is merged once"

        merged = defs.resolve_job_def("recall_scan").execute_in_process(
            instance=instance, tags=ready.run_requests[0].tags)
        assert merged.success
        result = merged.output_for_node("risk_scores")
    assert result.models, "the estate has models to compare"
    assert scan_json(result) == scan_json(one_scan), "the shards add up to one scan: findings, scores, blast radius"


@pytest.mark.filterwarnings("ignore:Function `AssetSelection.sources` is deprecated:DeprecationWarning")  # Dagster's own
def test_shards_of_different_instants_are_not_merged_and_one_backfill_merges(
    general: Path, storage: dict, tmp_path: Path
) -> None:
    defs = location(tmp_path / "home", shutil.copyfile(general, tmp_path / "general.db"), shards=2)
    shards, scan = defs.resolve_job_def("recall_scan_shards"), defs.resolve_job_def("recall_scan")
    with instance_for_test(overrides=storage) as instance:
        for key, at in (("0-of-2", SCAN_AT_MS), ("1-of-2", SCAN_AT_MS + 60_000)):
            config = {"ops": {"shard_scans": {"config": {"scanned_at": iso_instant(at)}}}}
            assert shards.execute_in_process(run_config=config, partition_key=key, instance=instance).success
        tick = merge_tick(defs, instance, None)
        assert not tick.run_requests and "waiting for shard 0-of-2" in tick.skip_reason.skip_message
        refused = scan.execute_in_process(instance=instance, raise_on_error=False)
        assert not refused.success
        [failure] = refused.get_step_failure_events()
        assert failure.step_key == "model_closures" and "different instants" in failure.event_specific_data.error.message

        backfill = PartitionBackfill.from_asset_partitions(
            backfill_id=uuid.uuid4().hex[:8], asset_graph=defs.resolve_asset_graph(), partition_names=["0-of-2", "1-of-2"],
            asset_selection=[AssetKey("shard_scans")], backfill_timestamp=SCAN_AT_MS / 1000 + 3600, tags={},
            dynamic_partitions_store=instance, all_partitions=False, title=None, description=None, run_config=None,
        )
        instance.add_backfill(backfill)
        for key in ("0-of-2", "1-of-2"):  # as the daemon launches a backfill's runs: tagged, with no instant given
            ran = shards.execute_in_process(partition_key=key, instance=instance,
                                            tags={BACKFILL_ID_TAG: backfill.backfill_id})
            [shard] = ran.asset_materializations_for_node("shard_scans")
            assert ran.success and shard.metadata["summary"].value.startswith(f"shard {key}: "), "its one line first"
        tick = merge_tick(defs, instance, None)
        assert tick.cursor == str(SCAN_AT_MS + 3_600_000), "the backfill's start is every shard's instant"
        assert scan.execute_in_process(instance=instance).success


def test_an_unsharded_rescan_in_dagster_keeps_the_verdicts_on_closures_no_change_reached(
    general: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``model_closures`` -> ``risk_findings`` as the ``recall_scan`` job runs them, twice on an unchanged graph."""
    defs = location(tmp_path / "home", shutil.copyfile(general, tmp_path / "general.db"), shards=1)
    job, selection = defs.resolve_job_def("recall_scan"), [AssetKey("model_closures"), AssetKey("risk_findings")]
    runs = count_detector_runs(monkeypatch)
    with instance_for_test() as instance:
        first = job.execute_in_process(instance=instance, asset_selection=selection)
        models = runs["pii_exposure"]
        runs.clear()
        again = job.execute_in_process(instance=instance, asset_selection=selection)
    assert models > 0 and set(runs) <= volatile_detectors()  # those whose verdicts may have turned since

    def by_detector(result) -> str:  # noqa: ANN001 - an ExecuteInProcessResult
        [materialization] = result.asset_materializations_for_node("risk_findings")
        return materialization.metadata["by_detector"].value

    assert by_detector(again) == by_detector(first)



@pytest.mark.slow  # four Dagster runs in processes: `make test-slow`
def test_four_shard_runs_launched_at_once_on_one_home_all_finish_without_waiting_on_a_lock(
    general: Path, tmp_path: Path
) -> None:
    """Four partitions as a run launcher starts them: four ``dagster asset materialize`` processes at once on
    one RECALL_HOME and one Dagster instance, none willing to wait for a lock, while a write-back and an
    incident sync hold their stores throughout."""
    home, graph = tmp_path / "home", shutil.copyfile(general, tmp_path / "general.db")
    home.mkdir()
    (home / "recall.yaml").write_text("dagster:\n  scan_shards: 4\n")
    env = {**os.environ, "RECALL_HOME": str(home), "RECALL_GRAPH": str(graph), "RECALL_LOCK_WAIT_SECONDS": "0",
           "DAGSTER_HOME": str(tmp_path / "dagster")}
    (tmp_path / "dagster").mkdir()
    DagsterInstance.local_temp(str(tmp_path / "dagster")).dispose()  # the deployment's instance, set up once
    config = json.dumps({"ops": {"shard_scans": {"config": {"scanned_at": iso_instant(SCAN_AT_MS)}}}})
    dagster = str(Path(sys.executable).with_name("dagster"))
    held = Settings(home=home, graph=str(graph), lock_wait_seconds=0)
    with held.writing("writeback", "a CLI write-back"), held.writing("incidents", "an incident sync"):
        runs = [subprocess.Popen([dagster, "asset", "materialize", "-m", "recall_dagster.definitions", "--select",
                                  "shard_scans", "--partition", f"{i}-of-4", "--config-json", config],
                                 env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                for i in range(4)]
        outputs = [run.communicate(timeout=600)[0] for run in runs]
    assert [run.returncode for run in runs] == [0, 0, 0, 0], [o[-2000:] for o in outputs if "RUN_SUCCESS" not in o]
    assert not any("is busy" in o for o in outputs)
    parts = ShardParts(held.state_dir, held.graph)
    assert parts.instants(4) == {f"{i}-of-4": SCAN_AT_MS for i in range(4)}
    with closing(LiteGraph(graph)) as lite:
        whole = run_scan(lite, load().scan, JsonStateStore(tmp_path / "one"), scanned_at_ms=SCAN_AT_MS)
    merged = gather(parts.load(4))
    assert sorted(c.urn for c in merged.closures) == sorted(m.closure.urn for m in whole.models), (
        "the four parts add up to the estate")
