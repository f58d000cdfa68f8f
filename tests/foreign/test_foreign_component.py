"""The foreign team's Dagster components project (`dg`) declares Recall with ``recall_dagster.RecallComponent``:
`dg scaffold defs` writes the defs.yaml, `dg check defs` passes, `dg list defs` shows Recall's assets, sensors and
schedule and the gate in front of the team's training; the gate blocks the retrain once the upstream dbt test
fails, and a training that does not depend on its gate is refused at load rather than trained ungated."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml
from dagster import (
    AssetKey,
    DagsterInstance,
    DefaultScheduleStatus,
    DefaultSensorStatus,
    Definitions,
    ExecuteInProcessResult,
    load_from_defs_folder,
)
from foreign_estate import CHURN, GATE, READS, fail_the_test, trained, versions

from recall_dagster.settings import Settings
from tests.gate_runs import withheld

TEMPLATE = Path(__file__).parent / "component_project"
REPO = Path(__file__).parents[2]
DG = Path(sys.executable).with_name("dg")
SCAN = {"model_closures", "risk_findings", "impact_tests", "risk_scores", "datahub_writeback"}


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    """A copy of the team's project, whose `dg` runs this interpreter; its package is forgotten afterwards, so
    the next test imports its own copy."""
    root = tmp_path / "shop_project"
    shutil.copytree(TEMPLATE, root)
    (root / ".env").write_text(f"DG_PROJECT_PYTHON_EXECUTABLE={sys.executable}\n")
    yield root
    for name in [m for m in sys.modules if m == "shop_dagster" or m.startswith("shop_dagster.")]:
        del sys.modules[name]


def dg(project: Path, *args: str) -> str:
    """The real `dg` CLI in the project folder, on this checkout's code, telemetry off; its stdout."""
    home = project.parent / "dagster_home"
    home.mkdir(exist_ok=True)
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    env = {**os.environ, "DAGSTER_HOME": str(home),
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([str(DG), *args], cwd=project, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def declare(project: Path, **attributes: Any) -> None:
    """Recall's defs.yaml, as a person edits it after `dg scaffold defs`."""
    folder = project / "shop_dagster" / "defs" / "recall"
    folder.mkdir(exist_ok=True)
    (folder / "defs.yaml").write_text(yaml.safe_dump({"type": "recall_dagster.RecallComponent",
                                                      "attributes": attributes}))


def load(project: Path, monkeypatch: pytest.MonkeyPatch) -> Definitions:
    """The project's definitions as `dg` and `dagster dev` load them, in this process."""
    monkeypatch.syspath_prepend(str(project))
    return load_from_defs_folder(path_within_project=project)


GATES = [{"training_asset": "shop/churn_model", "registered_model": "churn_model"}]


@pytest.mark.slow  # three `dg` processes, each loading Dagster and the project: some 45 s of a 5-minute budget
def test_dg_scaffolds_recall_and_its_check_and_listing_show_recall_beside_the_gated_training(project: Path) -> None:
    dg(project, "scaffold", "defs", "recall_dagster.RecallComponent", "recall",
       "--training-asset", "shop/churn_model", "--registered-model", "churn_model")
    written = yaml.safe_load((project / "shop_dagster" / "defs" / "recall" / "defs.yaml").read_text())
    assert written == {"type": "recall_dagster.RecallComponent",
                       "attributes": {"automation": "stopped", "gates": GATES}}

    assert "All definitions loaded successfully." in dg(project, "check", "defs")

    listed = json.loads(dg(project, "list", "defs", "--json"))
    assets = {a["asset_key"]: a for a in listed["assets"]}
    assert SCAN | {"data_incidents", "blind_window"} <= set(assets)
    assert assets["shop/churn_model_retrain_gate"]["dependency_keys"] == ["marts/customer_orders"], (
        "the gate runs after what the training reads"
    )
    assert "shop/churn_model_retrain_gate" in assets["shop/churn_model"]["dependency_keys"]
    checks = {c["key"] for c in listed["asset_checks"]}
    assert {"shop/churn_model_retrain_gate:retrain_gate", "shop/churn_model_retrain_gate:measured_impact"} <= checks
    assert {s["name"] for s in listed["sensors"]} == {"datahub_assertion_results", "mlflow_new_versions"}
    assert [s["name"] for s in listed["schedules"]] == ["nightly_scan"]
    assert {"recall_scan", "recall_rescan", "recall_rollback"} <= {j["name"] for j in listed["jobs"]}


def test_the_attributes_lay_recall_yaml_s_dagster_keys_over_it(project: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 tmp_path: Path) -> None:
    (tmp_path / "team.yaml").write_text(yaml.safe_dump({"dagster": {"nightly_scan_cron": "0 4 * * *"}}))
    declare(project, config_file="../../../../team.yaml", automation="running", scan_shards=3,
            scan_after=["shop/churn_model"])
    defs = load(project, monkeypatch)
    schedule = defs.resolve_schedule_def("nightly_scan")
    assert schedule.cron_schedule == "0 4 * * *", "the team's recall.yaml, named relative to the defs.yaml"
    assert schedule.default_status == DefaultScheduleStatus.RUNNING
    assert defs.resolve_sensor_def("mlflow_new_versions").default_status == DefaultSensorStatus.RUNNING
    shards = defs.resolve_job_def("recall_scan_shards").partitions_def
    assert shards is not None and len(shards.get_partition_keys()) == 3, "three shards fan the nightly scan out"
    shard_scans = defs.resolve_asset_graph().get(AssetKey("shard_scans"))
    assert CHURN in shard_scans.parent_keys, "the scan runs after what scan_after names"


def test_a_training_that_does_not_depend_on_its_gate_is_refused_at_load(project: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    training = project / "shop_dagster" / "defs" / "ml" / "training.py"
    training.write_text(training.read_text().replace(', AssetKey(["shop", "churn_model_retrain_gate"])', ""))
    declare(project, gates=GATES)
    with pytest.raises(Exception) as refused:
        load(project, monkeypatch)
    assert ('shop/churn_model does not depend on its gate shop/churn_model_retrain_gate: add '
            '"shop/churn_model_retrain_gate" to the deps of its asset decorator') in str(refused.value.__cause__)

    declare(project, gates=[{"training_asset": "shop/no_such_model", "registered_model": "churn_model"}])
    with pytest.raises(Exception) as missing:
        load(project, monkeypatch)
    assert "gates shop/no_such_model, but no component of this project defines it" in str(missing.value.__cause__)


def test_the_declared_gate_blocks_the_retrain_once_the_upstream_dbt_test_fails(
    project: Path, shop: Settings, overlay: str, instance: DagsterInstance, monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in {"RECALL_HOME": str(shop.home), "RECALL_GRAPH": shop.graph,
                        "MLFLOW_TRACKING_URI": shop.mlflow_uri}.items():
        monkeypatch.setenv(name, value)
    declare(project, config_file=overlay, gates=GATES)
    defs = load(project, monkeypatch)
    assert READS[0] in defs.resolve_asset_graph().get(GATE).parent_keys

    def retrain() -> ExecuteInProcessResult:
        job = defs.resolve_implicit_global_asset_job_def()
        return job.execute_in_process(instance=instance, asset_selection=[GATE, CHURN], raise_on_error=False)

    healthy = retrain()
    assert healthy.success and trained(healthy) is not None
    assert list(versions(shop)) == [1]

    fail_the_test(shop)
    refused = retrain()
    line, why = withheld(refused, GATE)
    assert trained(refused) is None, "the gate withheld itself: the training was skipped"
    assert list(versions(shop)) == [1], "the refused retrain registered nothing"
    assert line.startswith("NO-GO: ") and why["verdict"] == "NO-GO"
    assert "failing_assertions" in why["failing_checks"].split(", "), (
        "DataHub's record of the failed dbt test refuses it"
    )
