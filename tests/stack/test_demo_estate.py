"""The demo estate built end to end by the real systems, then scanned.

One build per session (Postgres from pgserver, dbt, MLflow, DataHub's dbt and
mlflow sources into a DataHub Lite file) at a small data scale.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Iterator

import pytest
from click.testing import CliRunner
from datahub.metadata import schema_classes as m

from recall_dagster.cli import cli
from recall_dagster.detect.finding import Finding, Severity
from recall_dagster.estate.marks import is_managed
from recall_dagster.graph import open_graph
from recall_dagster.progress import Progress
from recall_dagster.config.load import load
from recall_dagster.scan import select_closures
from recall_dagster.score import score_model
from recall_dagster.settings import Settings
from tests.contracts.conform import conforms
from seed import lifecycle

pytestmark = [pytest.mark.stack, pytest.mark.slow]

FRAUD_V1 = "urn:li:mlModel:(urn:li:dataPlatform:mlflow,fraud_detector_1,PROD)"


@pytest.fixture(scope="module")
def estate(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Settings, lifecycle.EstateSummary]]:
    home = tmp_path_factory.mktemp("estate")
    settings = Settings.from_env(home=home, graph=str(home / "datahub.db"))
    summary = lifecycle.build(settings, Progress(quiet=True), scale=0.05)
    yield settings, summary
    lifecycle.reset(settings, Progress(quiet=True))


def test_build_fills_the_graph_from_the_real_systems(estate) -> None:
    _, summary = estate
    assert summary.dbt["test"].get("pass", 0) >= 40 and not summary.failing_tests
    assert summary.raw_rows["transactions"] > 5_000
    counts = summary.entities
    assert counts["mlModel"] == 3 and counts["mlModelGroup"] == 3
    assert counts["mlFeatureTable"] == 3 and counts["mlFeature"] == 15
    assert counts["mlModelDeployment"] == 4
    assert counts["assertion"] >= 40
    assert {(name, version) for name, version, _ in summary.versions} == {
        ("fraud_detector", 1), ("churn_predictor", 1), ("demand_forecaster", 1)
    }
    assert dict((n, a) for n, _, a in summary.versions)["fraud_detector"] == ("production",)


def test_enrichment_links_models_features_deployments_and_training_inputs(estate) -> None:
    settings, _ = estate
    graph = open_graph(settings, read_only=True)
    try:
        props = graph.get_aspects([FRAUD_V1])[FRAUD_V1]["mlModelProperties"]
        assert isinstance(props, m.MLModelPropertiesClass)
        assert len(props.mlFeatures or []) == 6
        assert len(props.deployments or []) == 2
        assert props.trainingJobs, "the mlflow source's training link survives enrichment"
        run = props.trainingJobs[0]
        inputs = graph.get_aspects([run])[run]["dataProcessInstanceInput"]
        assert "urn:li:dataset:(urn:li:dataPlatform:postgres,warehouse.marts.fct_transactions,PROD)" in {
            e.destinationUrn for e in inputs.inputEdges
        }
        transactions = "urn:li:dataset:(urn:li:dataPlatform:postgres,warehouse.marts.fct_transactions,PROD)"
        assert not graph.timeseries([transactions], m.OperationClass)[transactions], "no operation is forged"
        [fraud] = select_closures(graph, load().scan, models=[FRAUD_V1])
        assert any(d.builds_ms for d in fraud.same_table(transactions)), (
            "dbt's model builds reach Recall as DataHub's dbt source records them (run_results.json)")
    finally:
        graph.close()


def test_datahub_lite_cli_reads_the_estate(estate, lite_cli) -> None:
    settings, _ = estate
    datahub = lite_cli(Path(settings.graph))
    model = json.loads(datahub("lite", "get", "--urn", FRAUD_V1))
    assert len(model["mlModelProperties"]["mlFeatures"]) == 6
    assert "databases" in datahub("lite", "ls", "/").split()


def test_second_build_reuses_what_exists(estate) -> None:
    settings, first = estate
    again = lifecycle.build(settings, Progress(quiet=True))
    assert again.raw_rows == {}, "the raw layer is not reloaded"
    assert again.versions == first.versions, "no model is retrained"
    runs = "dataProcessInstance"  # every dbt invocation is a new run in DataHub, by design
    assert {k: v for k, v in again.entities.items() if k != runs} == {
        k: v for k, v in first.entities.items() if k != runs
    }, "re-ingestion converges on the same graph"


def test_healthy_estate_scans_clean(estate, monkeypatch: pytest.MonkeyPatch) -> None:
    settings, _ = estate
    monkeypatch.setenv("RECALL_HOME", str(settings.home))
    monkeypatch.setenv("RECALL_GRAPH", settings.graph)
    result = CliRunner().invoke(cli, ["scan", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    production = {model["name"] for model in report["models"] if model["production"]}
    assert {"fraud_detector_1", "churn_predictor_1"} <= production
    serious = [f for model in report["models"] for f in model["findings"] if f["severity"] != "INFO"]
    assert serious == []


def _scan(settings: Settings, monkeypatch: pytest.MonkeyPatch, *flags: str) -> tuple[int, dict]:
    monkeypatch.setenv("RECALL_HOME", str(settings.home))
    monkeypatch.setenv("RECALL_GRAPH", settings.graph)
    result = CliRunner().invoke(cli, ["scan", "--json", *flags])
    report = json.loads(result.stdout)
    conforms("scan", report)
    return result.exit_code, report


WRITTEN_TYPES = ("assertion", "incident", "document", "structuredProperty", "tag")


def _written(settings: Settings) -> dict[str, int]:
    graph = open_graph(settings, read_only=True)
    try:
        return {etype: len(graph.list_urns(etype)) for etype in WRITTEN_TYPES}
    finally:
        graph.close()


def test_break_is_reported_by_the_detector_that_owns_each_injury(estate, monkeypatch: pytest.MonkeyPatch) -> None:
    settings, _ = estate
    broken = lifecycle.break_estate(settings, Progress(quiet=True))
    assert broken.failing_tests and all("unit_price" in name for name in broken.failing_tests)
    code, report = _scan(settings, monkeypatch)
    assert code == 1, "a model at the fail tier makes the scan exit 1"
    by_name = {model["name"]: model for model in report["models"]}
    retrained = by_name["fraud_detector_2"]
    assert retrained["tier"] == "CRITICAL" and retrained["production"]
    fired = {f["detector"] for model in report["models"] for f in model["findings"]}
    assert fired == {
        "training_source_schema_drift", "orphaned_feature", "upstream_staleness", "ownership_vacuum",
        "training_serving_skew", "undocumented_critical_path", "blast_radius", "pii_exposure",
        "failing_assertion", "deprecated_upstream", "version_mismatch", "profile_drift",
    }
    messages = " ".join(f["message"] for f in retrained["findings"])
    assert "occurred_at" in messages and "fct_device_features_v2" in messages and "priya.nair" in messages
    mismatch = [f for f in by_name["fraud_detector_1"]["findings"] if f["detector"] == "version_mismatch"]
    assert mismatch and "fraud-api-us" in mismatch[0]["message"]
    [cents] = [f for f in by_name["fraud_detector_1"]["findings"] if f["detector"] == "profile_drift"]
    assert cents["subject"].endswith("warehouse.raw.transactions,PROD)") and "amount: mean" in cents["message"]
    assert cents["evidence"]["features"] == ["amount_to_price_ratio", "txn_amount"]
    assert not any("amount" in f["message"] for f in by_name["fraud_detector_1"]["findings"]
                   if f["detector"] == "training_source_schema_drift"), "the unit change keeps the type"
    assert not [f for f in retrained["findings"] if f["detector"] == "profile_drift"], "it trained on the cents"
    stale = [f for f in by_name["churn_predictor_1"]["findings"] if f["detector"] == "upstream_staleness"]
    assert stale and "raw.customers" in stale[0]["message"]
    transactions = "warehouse.raw.transactions,PROD)"
    drifted = [f for m in report["models"] for f in m["findings"]
               if f["detector"] == "training_source_schema_drift" and f["subject"].endswith(transactions)]
    at_risk = any(row["dataset"].endswith(transactions) for row in report["blast_radius"])
    assert drifted and at_risk == any(f["severity"] != "INFO" for f in drifted), (
        "the blast radius spreads the severity the replay measured: a retype measured harmless endangers no one"
    )
    _, unmeasured = _scan(settings, monkeypatch, "--no-measure")
    assert any(row["dataset"].endswith(transactions) for row in unmeasured["blast_radius"])
    replayed = [
        f["evidence"]["measured"] for f in retrained["findings"]
        if f["detector"] in ("failing_assertion", "training_source_schema_drift") and "measured" in f["evidence"]
    ]
    verdicts = {m["verdict"] for m in replayed}
    assert verdicts & {"PASS", "WARN", "BLOCK"}, "the injuries are replayed on fraud_detector_2 and carry verdicts"
    mutations = {e["mutation"] for m in replayed for e in m.get("experiments", ())}
    assert {"timezone_shift:1", "null_fraction"} <= mutations, mutations
    before = lifecycle.entity_counts(settings)
    lifecycle.break_estate(settings, Progress(quiet=True))
    assert lifecycle.entity_counts(settings) == before, "a second break retrains and writes nothing"


def test_an_acknowledged_pii_finding_is_shown_not_scored_until_it_expires(
    estate, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings, _ = estate
    tomorrow = (datetime.now(timezone.utc) + timedelta(days=1)).date().isoformat()
    monkeypatch.setenv("RECALL_USER", "ana.lopez")
    _, before = _scan(settings, monkeypatch, "--no-measure")
    made = CliRunner().invoke(cli, ["ack", "pii_exposure", "raw.transactions", "--model", "fraud_detector", "--until",
                                    tomorrow, "--reason", "card numbers are masked before training; legal signs off"])
    assert made.exit_code == 0, made.output
    _, after = _scan(settings, monkeypatch, "--no-measure")
    scoring = load().scan.scoring
    for name in ("fraud_detector_1", "fraud_detector_2"):
        model = {m["name"]: m for m in after["models"]}[name]
        [pii] = [f for f in model["findings"] if f["detector"] == "pii_exposure"]
        assert pii["acknowledged"]["by"] == "ana.lopez" and "legal signs off" in pii["acknowledged"]["reason"]
        assert pii["acknowledged"]["until"].startswith((datetime.now(timezone.utc) + timedelta(days=2)).date().isoformat())
        counted = [Finding(f["detector"], Severity(f["severity"]), f["subject"], f["message"])
                   for f in model["findings"] if f["acknowledged"] is None]
        assert model["score"] == score_model(counted, model["deployments"], scoring).value, "scored without it"
    churn = {m["name"]: m for m in after["models"]}["churn_predictor_1"]
    assert all(f["acknowledged"] is None for f in churn["findings"]), "--model fraud_detector: only there"
    later = (datetime.now(timezone.utc) + timedelta(days=3)).isoformat()
    _, expired = _scan(settings, monkeypatch, "--no-measure", "--as-of", later)
    again = [f for m in expired["models"] for f in m["findings"] if f["detector"] == "pii_exposure"]
    assert again and all(f["acknowledged"] is None for f in again), "counted again after it expires"
    assert len(before["models"]) == len(after["models"])


def test_write_back_twice_writes_the_diagnosis_once(estate, monkeypatch: pytest.MonkeyPatch) -> None:
    settings, _ = estate
    code, first = _scan(settings, monkeypatch, "--write")
    assert code == 1 and first["writeback"]["counts"]["incident"]["landed"] > 0
    after_first = _written(settings)
    code, second = _scan(settings, monkeypatch, "--write")
    assert _written(settings) == after_first, "the second write-back adds no entity"
    assert second["writeback"]["counts"]["incident"]["planned"] == 0
    assert second["writeback"]["counts"]["tag"]["planned"] == 0


def test_heal_stands_every_model_down(estate, monkeypatch: pytest.MonkeyPatch) -> None:
    settings, _ = estate
    healed = lifecycle.heal(settings, Progress(quiet=True))
    assert not healed.failing_tests
    code, report = _scan(settings, monkeypatch)
    assert code == 0
    assert all(model["tier"] == "HEALTHY" for model in report["models"]), report["models"]
    assert "fraud_detector_3" in {model["name"] for model in report["models"]}


def test_write_back_stands_down_after_heal(estate, monkeypatch: pytest.MonkeyPatch) -> None:
    settings, _ = estate
    code, _ = _scan(settings, monkeypatch, "--write")
    assert code == 0
    graph = open_graph(settings, read_only=True)
    try:
        incidents = graph.list_urns("incident")
        infos = graph.get_aspects(incidents, [m.IncidentInfoClass])
        assert incidents and all(infos[u]["incidentInfo"].status.state == "RESOLVED" for u in incidents)
        models = graph.list_urns("mlModel")
        tags = graph.get_aspects(models, [m.GlobalTagsClass])
        recall_tags = [t.tag for u in models for g in [tags[u].get("globalTags")] if g for t in g.tags if "recall:" in t.tag]
        assert recall_tags == []
        assertions = graph.get_aspects(graph.list_urns("assertion"), [m.AssertionInfoClass])
        ours = [u for u, a in assertions.items() if is_managed(a["assertionInfo"].customProperties)]
        latest = [events[0] for events in graph.timeseries(ours, m.AssertionRunEventClass, limit=1).values()]
        assert ours and all(run.result.type == "SUCCESS" for run in latest)
    finally:
        graph.close()


def test_the_lifecycle_is_reachable_from_seed() -> None:
    done = subprocess.run([sys.executable, "-m", "seed", "--help"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0
    assert all(command in done.stdout for command in ("build", "break", "heal", "reset"))
