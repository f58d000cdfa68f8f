"""``recall impact`` on the demo estate built by the real systems: MLflow models, their logged held-out rows,
DataHub's lineage from dbt and the mlflow source."""

from __future__ import annotations

import json
import shutil
import time
from contextlib import closing
from pathlib import Path
from typing import Iterator

import pytest
from click.testing import CliRunner
from datahub.metadata import schema_classes as m
from mlflow import MlflowClient

from recall_dagster.cli import cli
from recall_dagster.graph import GmsGraph, open_graph
from recall_dagster.config.load import load
from recall_dagster.impact.models import MlflowModels
from recall_dagster.impact.publish import IMPACT_VERDICT
from recall_dagster.impact.service import ImpactRequest, impact_test, record_impact
from recall_dagster.settings import Settings
from recall_dagster.writeback.config import RetryPolicy
from tests.contracts.conform import conforms
from tests.cutting import HttpCut, TcpCut, mlflow_server
from tests.conftest import built_estate, point_recall_at
from seed.stack.warehouse import ensure_warehouse
from tests.writeback.wb_support import WritebackGms, serve

pytestmark = [pytest.mark.stack, pytest.mark.slow]

FRAUD_COLUMNS = [
    ("fct_transactions", "amount"),
    ("fct_transactions", "hour_of_day"),
    ("fct_transactions", "unit_price"),
    ("fct_transactions", "amount_to_price_ratio"),
    ("fct_device_features", "ip_risk_score"),
    ("fct_device_features", "is_emulator"),
]


@pytest.fixture(scope="module")
def estate(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    with built_estate(tmp_path_factory.mktemp("impact")) as settings:
        yield settings


@pytest.fixture
def env(estate: Settings, monkeypatch: pytest.MonkeyPatch) -> Settings:
    return point_recall_at(estate, monkeypatch)


def impact(*args: str) -> tuple[int, dict]:
    result = CliRunner().invoke(cli, ["impact", *args, "--json"])
    assert result.exit_code in (0, 1, 4), result.output
    report = json.loads(result.stdout)
    conforms("impact", report)
    return result.exit_code, report


def measure(settings: Settings, table: str, column: str, mutation: str) -> dict:
    ic = load().impact
    with closing(open_graph(settings, read_only=True)) as graph:
        report = impact_test(
            graph, load().scan, load().lifecycle, ic, ImpactRequest(table, column, mutation),
            MlflowModels(settings.mlflow_uri, ic, load().warehouse), int(time.time() * 1000),
        )
    return report.contract().as_json()


def test_shuffling_the_column_behind_the_strongest_feature_costs_skill_and_only_passes_below_the_warn_bounds(
    env: Settings,
) -> None:
    losses = {}
    for table, column in FRAUD_COLUMNS:
        [row] = measure(env, table, column, "shuffle")["results"]
        losses[(table, column)] = row["loss"]
    strongest = max(losses, key=lambda k: losses[k])
    assert losses[strongest] > 0, "breaking the link between a column and its rows costs the model skill"
    code, report = impact(strongest[0], "--column", strongest[1], "--mutation", "shuffle")
    [row] = report["results"]
    assert row["model"] == "fraud_detector" and row["version"] == "1", "the version the production alias serves"
    assert code == {"PASS": 0, "WARN": 0, "BLOCK": 1}[report["verdict"]]
    assert row["flip_rate"] > 0 and row["delta"] < 0
    warn = load().impact.policy.warn
    if report["verdict"] == "PASS":
        assert row["loss"] < warn.metric_loss and row["flip_rate"] < warn.flip_rate, "a PASS hides no real loss"
    if "; significant" in row["reason"] or "not significant" in row["reason"]:
        assert ("; significant" in row["reason"]) == (row["ci"][1] <= 0), "the reason states what the interval shows"
    assert row["rows"] >= 200 and row["failures"] == 0
    assert report["schema_version"] == 1 and report["mutation"] == "shuffle" and report["fraction"] == 1.0

    code, unchanged = impact(strongest[0], "--column", strongest[1], "--mutation", "null_fraction:0")
    [row] = unchanged["results"]
    assert (code, unchanged["verdict"], row["flip_rate"], row["delta"]) == (0, "PASS", 0.0, 0.0)


def test_a_column_no_production_model_reads_affects_nothing(env: Settings) -> None:
    code, report = impact("dim_customers", "--column", "email", "--mutation", "constant")
    assert (code, report["verdict"], report["results"], report["affected_models"]) == (0, "PASS", [], 0)
    text = CliRunner().invoke(cli, ["impact", "dim_customers", "--column", "email", "--mutation", "drop"]).output
    assert "nothing is affected" in " ".join(text.split())


def test_dropping_a_column_the_model_needs_blocks_on_inference_failures(env: Settings) -> None:
    code, report = impact("fct_transactions", "--column", "amount", "--mutation", "drop", "--no-write")
    [row] = report["results"]
    assert (code, row["verdict"]) == (1, "BLOCK")
    assert row["failures"] > 0 and "failed inference" in row["reason"]


def test_evaluation_rows_the_run_never_logged_are_incomplete(env: Settings, tmp_path: Path) -> None:
    overlay = tmp_path / "recall.yaml"
    overlay.write_text("impact:\n  evaluation:\n    artifact: evaluation/never_logged.parquet\n")
    code, report = impact("fct_transactions", "--column", "amount", "--mutation", "scale", "--config", str(overlay),
                          "--no-write")
    [row] = report["results"]
    assert (code, report["verdict"], row["verdict"]) == (4, "INCOMPLETE", "INCOMPLETE")
    assert "logged no evaluation data at evaluation/never_logged.parquet" in row["reason"]


def test_without_logged_rows_the_training_query_is_rerun_on_the_warehouse(
    env: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEMO_WAREHOUSE", ensure_warehouse(env).url)
    overlay = tmp_path / "recall.yaml"
    overlay.write_text(
        "impact:\n  evaluation:\n    artifact: evaluation/never_logged.parquet\n    query:\n"
        "      connection: env:DEMO_WAREHOUSE\n      input_prefix: feature__\n      label_prefix: label__\n"
        "      max_rows: 1500\n"
    )
    code, report = impact("fct_transactions", "--column", "amount", "--mutation", "null_fraction:0", "--config",
                          str(overlay), "--no-write")
    [row] = report["results"]
    assert (code, row["verdict"], row["rows"], row["flip_rate"]) == (0, "PASS", 1500, 0.0)

    monkeypatch.setenv("DEMO_WAREHOUSE", "postgresql://nobody@127.0.0.1:9/warehouse")
    result = CliRunner().invoke(cli, ["impact", "fct_transactions", "--column", "amount", "--mutation", "scale",
                                      "--config", str(overlay), "--no-write"])
    assert result.exit_code == 3 and "the warehouse did not answer the training query" in result.output


def test_a_model_that_cannot_be_loaded_is_incomplete(env: Settings) -> None:
    client = MlflowClient(tracking_uri=env.mlflow_uri, registry_uri=env.mlflow_uri)
    model_dir = Path(client.get_model_version_download_uri("fraud_detector", "1").removeprefix("file://"))
    pickled = model_dir / "model.pkl"
    hidden = model_dir / "model.pkl.hidden"
    shutil.move(pickled, hidden)
    try:
        code, report = impact("fct_transactions", "--column", "amount", "--mutation", "scale", "--no-write")
    finally:
        shutil.move(hidden, pickled)
    [row] = report["results"]
    assert (code, row["verdict"]) == (4, "INCOMPLETE")
    assert "fraud_detector version 1 cannot be loaded" in row["reason"]


def test_the_verdict_reaches_datahub_once(env: Settings) -> None:
    args = ("fct_transactions", "--column", "amount", "--mutation", "scale:100")
    _, first = impact(*args)
    assert first["record"]["writes"] >= 1 and not first["record"]["failures"], "at least the experiment's document"
    _, second = impact(*args)
    assert second["record"]["writes"] == 0, "the same experiment again writes nothing"
    evidence = Path(first["record"]["evidence"][0])
    assert json.loads(evidence.read_text())["verdict"] == first["verdict"]
    model = first["results"][0]["model_urn"]
    with closing(open_graph(env, read_only=True)) as graph:
        props = graph.get_aspects([model], [m.StructuredPropertiesClass])[model]["structuredProperties"]
        assert [p.values for p in props.properties if p.propertyUrn == IMPACT_VERDICT] == [[first["verdict"]]]


def test_the_experiment_is_on_disk_before_a_write_back_that_fails(env: Settings) -> None:
    with closing(open_graph(env, read_only=True)) as graph:
        ic = load().impact
        report = impact_test(
            graph, load().scan, load().lifecycle, ic,
            ImpactRequest("fct_transactions", "amount", "shift:5"), MlflowModels(env.mlflow_uri, ic, load().warehouse),
            int(time.time() * 1000),
        )
    with serve(WritebackGms(fail_writes=True)) as server, closing(GmsGraph(server.url, retries=0)) as gms:
        once_more = RetryPolicy(attempts=2, backoff_seconds=0, max_backoff_seconds=0, budget_seconds=3600)
        published = record_impact(gms, env, report, once_more, int(time.time() * 1000))
        assert server.landed == []
    assert published.failures and all("503" in f or "Service Unavailable" in f for f in published.failures)
    kept = json.loads(published.evidence[0].read_text())
    assert kept["results"] == report.contract().as_json()["results"] and published.evidence[1].read_text().startswith(
        "# Impact test: shift:5 on warehouse.marts.fct_transactions.amount"
    )


def evidence_files(settings: Settings) -> set[Path]:
    return set(settings.evidence_dir.rglob("*")) if settings.evidence_dir.exists() else set()


def test_mlflow_that_stops_answering_mid_run_exits_3_naming_what_was_read(
    env: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    overlay = tmp_path / "recall.yaml"
    overlay.write_text("impact:\n  registry:\n    timeout_seconds: 5\n    retries: 1\n")
    before = evidence_files(env)
    with mlflow_server(env.mlflow_uri, tmp_path / "mlflow-server.log") as upstream:
        proxy = HttpCut(upstream, lambda path, _: path.endswith("/model-versions/get-download-uri"))
        monkeypatch.setenv("MLFLOW_TRACKING_URI", proxy.url)
        try:
            result = CliRunner().invoke(cli, ["impact", "fct_transactions", "--column", "amount", "--mutation",
                                              "scale", "--config", str(overlay), "--no-write"])
        finally:
            proxy.close()
    assert "/api/2.0/mlflow/model-versions/get" in proxy.seen, "MLflow answered before it stopped"
    assert result.exit_code == 3, result.output
    assert f"MLflow at {proxy.url} did not answer while reading fraud_detector version" in result.output
    assert "Traceback" not in result.output and evidence_files(env) == before, "no half experiment is kept"


def test_a_warehouse_that_goes_away_in_the_middle_of_a_result_exits_3(
    env: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    warehouse = ensure_warehouse(env)
    cut = TcpCut(f"{warehouse.host}/.s.PGSQL.{warehouse.port}", limit=64_000)
    overlay = tmp_path / "recall.yaml"
    overlay.write_text(
        "impact:\n  evaluation:\n    artifact: evaluation/never_logged.parquet\n    query:\n"
        "      connection: env:DEMO_WAREHOUSE\n      input_prefix: feature__\n      label_prefix: label__\n"
    )
    monkeypatch.setenv("DEMO_WAREHOUSE", f"postgresql://{warehouse.user}@127.0.0.1:{cut.port}/{warehouse.database}")
    before = evidence_files(env)
    try:
        result = CliRunner().invoke(cli, ["impact", "fct_transactions", "--column", "amount", "--mutation", "scale",
                                          "--config", str(overlay), "--no-write"])
    finally:
        cut.close()
    assert cut.severed >= 1, "the connection was cut while the rows were on their way"
    assert result.exit_code == 3, result.output
    assert "the warehouse did not answer the training query of fraud_detector version" in result.output
    assert "Traceback" not in result.output and evidence_files(env) == before
