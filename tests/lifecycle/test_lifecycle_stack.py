"""The whole lifecycle on the demo estate, built by the real systems: break, incident, blind window, gate, heal.

One small estate for the module; the tests run in order, as the demo does:
``recall estate break``, then the normal runs, then ``recall estate heal``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterator

import pytest
from dagster import DagsterInstance
from click.testing import CliRunner
from datahub.metadata.schema_classes import (
    DataProcessInstancePropertiesClass,
    DocumentInfoClass,
    IncidentInfoClass,
    IncidentStateClass,
)

from recall_dagster.cli import cli
from recall_dagster.graph import open_graph
from recall_dagster.progress import Progress
from recall_dagster.settings import Settings
from seed.stack.warehouse import ensure_warehouse
from seed import lifecycle

pytestmark = [pytest.mark.stack, pytest.mark.slow]

FRAUD = "urn:li:mlModel:(urn:li:dataPlatform:mlflow,fraud_detector_{},PROD)"
TEST = "not_null_fct_transactions_unit_price"


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    home = tmp_path_factory.mktemp("lifecycle-estate")
    settings = Settings.from_env(home=home, graph=str(home / "datahub.db"))
    lifecycle.build(settings, Progress(quiet=True), scale=0.05)
    yield settings
    lifecycle.reset(settings, Progress(quiet=True))


@pytest.fixture
def recall(settings: Settings, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("RECALL_HOME", str(settings.home))
    monkeypatch.setenv("RECALL_GRAPH", settings.graph)
    monkeypatch.delenv("RECALL_WAREHOUSE_URL", raising=False)

    def run(*args: str) -> tuple[int, dict]:
        result = CliRunner().invoke(cli, [*args, "--json"])
        assert result.exit_code in (0, 1), result.output
        return result.exit_code, json.loads(result.stdout)

    return run


def _null_prices(settings: Settings) -> int:
    """What dbt's not_null test on fct_transactions.unit_price counts, asked of Postgres itself."""
    with ensure_warehouse(settings).connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT count(*) FROM marts.fct_transactions WHERE unit_price IS NULL")
        return cur.fetchone()[0]


def _aspect(settings: Settings, urn: str, aspect: type):
    graph = open_graph(settings, read_only=True)
    try:
        return graph.get_aspects([urn], [aspect])[urn].get(aspect.ASPECT_NAME)
    finally:
        graph.close()


def test_training_in_dagster_leaves_the_process_mlflow_settings_as_they_were(settings: Settings) -> None:
    """dagster-mlflow's resource exports MLFLOW_TRACKING_URI for the whole process; the next estate built in this
    process (the next test module on this worker, in CI) read this one's store until the run put it back."""
    assert os.environ.get("MLFLOW_TRACKING_URI") != settings.mlflow_uri


def test_the_healthy_estate_has_no_incident_and_the_gate_says_go(recall) -> None:
    code, synced = recall("incidents", "sync")
    assert code == 0 and synced["raised"] == [] and synced["active"] == []
    code, gate = recall("gate", "fraud_detector")
    assert code == 0 and gate["verdict"] == "GO" and gate["name"] == "fraud_detector_1"
    assert len(gate["checks"]) >= 10


def test_a_bad_load_raises_an_incident_naming_the_poisoned_features_per_model(settings, recall) -> None:
    broken = lifecycle.break_estate(settings, Progress(quiet=True))
    assert TEST in broken.failing_tests
    code, synced = recall("incidents", "sync")
    prices, stale = sorted(synced["raised"], key=lambda i: TEST not in i["tests"])
    assert set(prices["tests"]) == {TEST, "not_null_fct_orders_unit_price"}
    assert all("unit_price" not in test for test in stale["tests"]), "the stale customers feed is its own incident"
    incident = prices
    nulls = _null_prices(settings)
    models = {m["name"]: m for m in incident["models"]}
    for version in ("fraud_detector_1", "fraud_detector_2"):
        assert models[version]["summary"] == "1 of 6 features poisoned, 1 suspect", (
            "order_unit_price is derived from the failing column; amount_to_price_ratio only shares its origin"
        )
        assert models[version]["suspect"] == ["amount_to_price_ratio"]
        assert models[version]["failed_rows"] == nulls > 0 and models[version]["live_deployments"]
    assert models["demand_forecaster_1"]["summary"] == "1 of 4 features poisoned"
    assert incident["severity"] == "MEDIUM", "one confirmed feature in six: worth a look, not a page"
    assert models["demand_forecaster_1"]["severity"] == "MEDIUM", "a quarter, and serving nothing live"
    info = _aspect(settings, incident["urn"], IncidentInfoClass)
    assert info.status.state == IncidentStateClass.ACTIVE
    assert FRAUD.format(2) in info.entities
    assert f"{nulls} failing rows" in info.description and "order_unit_price" in info.description
    assert "trained by Dagster run" in info.description, "the incident names the run that trained on bad data"
    _, again = recall("incidents", "sync")
    assert again["raised"] == again["updated"] == [] and len(again["active"]) == 2, "a re-run changes nothing"


def test_the_blind_window_marks_the_retrain_contaminated_and_its_predecessor_the_rollback(settings, recall) -> None:
    code, report = recall("blind-window", TEST)
    assert code == 1, "a live deployment serves a contaminated version"
    (cause,) = report["causes"]
    assert cause["origins"] == ["warehouse.raw.orders.unit_price"] and cause["window"]["open"]
    fraud = next(m for m in cause["models"] if m["name"] == "fraud_detector")
    verdicts = {v["name"]: v["verdict"] for v in fraud["versions"]}
    assert verdicts == {"fraud_detector_2": "CONTAMINATED", "fraud_detector_1": "CLEAN"}
    assert fraud["rollback"]["name"] == "fraud_detector_1"
    assert report["contaminated_live"] == ["fraud_detector_2"]
    trained = {v["name"]: v["trained_by"] for v in fraud["versions"]}
    assert trained["fraud_detector_1"]["run_id"] != trained["fraud_detector_2"]["run_id"], "each its own training"
    with DagsterInstance.from_config(str(settings.home / "dagster")) as instance:
        for run in trained.values():
            assert instance.get_run_by_id(run["run_id"]).job_name == "estate_training", (
                "the demo trains in Dagster: each version names the run recorded under RECALL_HOME/dagster")
            assert run["url"] == f"http://127.0.0.1:3000/runs/{run['run_id']}", "linked where `recall dagster` serves"
    assert f"Dagster run {trained['fraud_detector_2']['run_id'][:8]}" in cause["narrative"]
    graph = open_graph(settings)
    try:
        instances = graph.list_urns("dataProcessInstance")
        named = {a["dataProcessInstanceProperties"].name
                 for a in graph.get_aspects(instances, [DataProcessInstancePropertiesClass]).values() if a}
    finally:
        graph.close()
    assert {run["run_id"] for run in trained.values()} <= named, (
        "each training run reached DataHub through DataHub's Dagster plugin, as a process instance of its own")
    _, by_table = recall("blind-window", "warehouse.marts.fct_transactions")
    assert by_table["causes"][0]["models"] == cause["models"], "a dataset finds the same root cause"


def test_the_gate_refuses_the_retrain_with_the_failing_checks_listed(recall) -> None:
    code, gate = recall("gate", "fraud_detector")
    assert code == 1 and gate["verdict"] == "NO-GO" and gate["name"] == "fraud_detector_2"
    assert {"active_incidents", "failing_assertions", "contaminated_version"} <= set(gate["failing_checks"])
    code, by_urn = recall("gate", FRAUD.format(1))
    assert code == 1 and by_urn["name"] == "fraud_detector_1", "a version can be judged by URN"


def test_the_heal_resolves_the_incident_with_a_postmortem_and_the_gate_says_go(settings, recall) -> None:
    healed = lifecycle.heal(settings, Progress(quiet=True))
    assert not healed.failing_tests
    code, synced = recall("incidents", "sync")
    incident = next(i for i in synced["resolved"] if TEST in i["tests"])
    assert len(synced["resolved"]) == 2 and synced["active"] == [] and synced["failures"] == []
    info = _aspect(settings, incident["urn"], IncidentInfoClass)
    assert info.status.state == IncidentStateClass.RESOLVED
    document = _aspect(settings, incident["postmortem"]["document"], DocumentInfoClass)
    text = document.contents.text
    for part in ("## Timeline", "Time to detect", "Time to heal", "## Blast radius", "fraud_detector_2", "completeness"):
        assert part in text
    files = [Path(f) for f in incident["postmortem"]["files"]]
    assert all(f.exists() and f.parent == settings.evidence_dir / "postmortems" for f in files)
    assert json.loads(files[1].read_text())["classification"]["impact"] == "contaminated-training"
    code, gate = recall("gate", "fraud_detector")
    assert code == 0 and gate["verdict"] == "GO" and gate["name"] == "fraud_detector_3"
    _, report = recall("blind-window", TEST)
    fraud = next(m for m in report["causes"][0]["models"] if m["name"] == "fraud_detector")
    assert {v["name"]: v["verdict"] for v in fraud["versions"]}["fraud_detector_2"] == "CONTAMINATED"
