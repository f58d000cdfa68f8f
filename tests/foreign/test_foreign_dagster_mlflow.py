"""A team that trains in Dagster through dagster-mlflow's resource: each MLflow run carries its Dagster run id
(``dagster_run_id``), which DataHub's mlflow source drops. The blind window, the gate and the incident Recall
raises name the Dagster run that trained each version, linked to it when ``dagster.webserver_url`` is set. (No future annotations: Dagster reads the `context`
annotation of the asset here.)

dagster-mlflow pins pandas below 3, so it is in neither the demo's lock nor the newest team environments: this
runs in the oldest (``make test-envs``, envs/team-oldest.in) and is skipped where dagster-mlflow is missing."""

import json
import os
from pathlib import Path
from typing import Any

import mlflow
import pytest
from click.testing import CliRunner
from dagster import AssetExecutionContext, AssetKey, DagsterInstance, asset, instance_for_test, materialize

mlflow_tracking = pytest.importorskip("dagster_mlflow", reason="dagster-mlflow pins pandas below 3: "
                                     "the oldest team environment runs this").mlflow_tracking
from foreign_estate import OVERLAY, fail_the_test, shop_as, stock
from mlflow import MlflowClient

from ml_models.tracking import mlflow_process_state
from recall_dagster.cli import cli
from recall_dagster.graph import open_graph
from recall_dagster.settings import Settings
from tests.contracts.conform import conforms

UI = "http://dagster.shop.example:3000"


def train_in_dagster(shop: Settings, instance: DagsterInstance) -> str:
    """One materialization of the team's training asset: dagster-mlflow opens the run, the asset registers the
    version from it. Returns the Dagster run id."""

    @asset(key=AssetKey(["shop", "churn_model"]), required_resource_keys={"mlflow"})
    def train_churn(context: AssetExecutionContext) -> None:
        run = context.resources.mlflow.active_run()
        client = MlflowClient(tracking_uri=shop.mlflow_uri, registry_uri=shop.mlflow_uri)
        if not client.search_registered_models("name = 'churn_model'"):
            client.create_registered_model("churn_model")
        client.create_model_version("churn_model", source="file:///nowhere", run_id=run.info.run_id)

    tracking = mlflow_tracking.configured({"experiment_name": "churn", "mlflow_tracking_uri": shop.mlflow_uri})
    with mlflow_process_state():
        try:
            result = materialize([train_churn], resources={"mlflow": tracking}, instance=instance)
        finally:
            mlflow.end_run()  # what dagster-mlflow's end_mlflow_on_run_finished hook does at the end of a job
    assert result.success
    return result.run_id


@pytest.fixture
def shop(tmp_path: Path) -> tuple[Settings, list[str]]:
    shop = shop_as(tmp_path, stock)
    (tmp_path / "recall.yaml").write_text(json.dumps({**OVERLAY, "dagster": {"webserver_url": UI + "/"}}))
    with instance_for_test() as instance:
        runs = [train_in_dagster(shop, instance) for _ in range(2)]
    MlflowClient(tracking_uri=shop.mlflow_uri, registry_uri=shop.mlflow_uri).set_registered_model_alias(
        "churn_model", "production", "2")
    fail_the_test(shop)
    return shop, runs


def recall(shop: Settings, *args: str) -> tuple[int, Any]:
    done = CliRunner().invoke(
        cli, [*args, "--json", "--graph", shop.graph, "--config", str(Path(shop.graph).with_name("recall.yaml"))],
        env={"RECALL_HOME": str(shop.home), "MLFLOW_TRACKING_URI": shop.mlflow_uri},
    )
    assert done.exception is None or isinstance(done.exception, SystemExit), done.exception
    return done.exit_code, json.loads(done.stdout)


def test_each_mlflow_run_carries_the_dagster_run_that_opened_it(shop: tuple[Settings, list[str]]) -> None:
    settings, runs = shop
    client = MlflowClient(tracking_uri=settings.mlflow_uri, registry_uri=settings.mlflow_uri)
    tagged = [client.get_run(client.get_model_version("churn_model", v).run_id).data.tags.get("dagster_run_id")
              for v in ("1", "2")]
    assert tagged == runs and len(set(runs)) == 2, "one MLflow run per Dagster run, each tagged with its id"


def test_training_through_dagster_mlflow_leaves_the_process_tracking_where_it_was(
        shop: tuple[Settings, list[str]]) -> None:
    """dagster-mlflow sets MLflow's tracking URI for the whole process, environment included; after the run, the
    next estate this process opens must not find its MLflow store pointing at this one (CI once did, and wrote
    into a deleted estate's database)."""
    settings, _ = shop
    assert os.environ.get("MLFLOW_TRACKING_URI") != settings.mlflow_uri


def test_the_blind_window_names_the_dagster_run_that_trained_each_version(shop: tuple[Settings, list[str]]) -> None:
    settings, runs = shop
    code, window = recall(settings, "blind-window")
    conforms("blind-window", window)
    [cause] = window["causes"]
    churn = next(m for m in cause["models"] if m["group"].endswith("churn_model,PROD)"))
    named = {v["version"]: v["trained_by"] for v in churn["versions"]}
    assert named == {
        "2": {"run_id": runs[1], "url": f"{UI}/runs/{runs[1]}"},
        "1": {"run_id": runs[0], "url": f"{UI}/runs/{runs[0]}"},
    }, "the registry's run tag reaches each version, linked under the configured webserver"
    contaminated = [v for v in churn["versions"] if v["verdict"] == "CONTAMINATED"]
    assert contaminated and all(f"Dagster run {v['trained_by']['run_id'][:8]}" in cause["narrative"]
                                for v in contaminated), cause["narrative"]


def test_the_gate_names_the_run_that_trained_the_version_it_judged(shop: tuple[Settings, list[str]]) -> None:
    settings, runs = shop
    code, gate = recall(settings, "gate", "churn_model")
    conforms("gate", gate)
    assert gate["name"] == "churn_model_2" and gate["trained_by"] == {"run_id": runs[1], "url": f"{UI}/runs/{runs[1]}"}


def test_the_incident_recall_raises_names_the_run(shop: tuple[Settings, list[str]]) -> None:
    settings, runs = shop
    code, synced = recall(settings, "incidents", "sync")
    assert code in (0, 1) and synced["raised"], synced
    graph = open_graph(settings)
    try:
        from datahub.metadata.schema_classes import IncidentInfoClass

        incidents = graph.get_aspects(graph.list_urns("incident"), [IncidentInfoClass])
    finally:
        graph.close()
    descriptions = [a[IncidentInfoClass.ASPECT_NAME].description for a in incidents.values()
                    if IncidentInfoClass.ASPECT_NAME in a]
    assert any(f"Dagster run {runs[1][:8]}" in (d or "") for d in descriptions), descriptions
