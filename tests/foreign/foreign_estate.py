"""The foreign estate's files and the next dbt run, and the team's Dagster code around it (no future annotations:
Dagster reads the `context` annotation of the assets here)."""

import json
from pathlib import Path
from typing import Any, Callable

from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    DagsterInstance,
    Definitions,
    ExecuteInProcessResult,
    MaterializeResult,
    asset,
    define_asset_job,
)
from mlflow import MlflowClient

from recall_dagster.defs import RecallResource, retrain_gate
from recall_dagster.lifecycle.override import OVERRIDE_BY_TAG, OVERRIDE_REASON_TAG
from recall_dagster.settings import Settings
from tests.scan.scan_estates import ingest

FIXTURES = Path(__file__).parent / "fixtures"
# The fixtures are dated around 2025-06-01; a window this wide keeps them fresh whenever the tests run.
OVERLAY = {"freshness": {"default_window_hours": 10_000_000}}


def stock(record: dict[str, Any]) -> dict[str, Any]:
    """What DataHub's mlflow source writes for a churn version on MLflow 2.20's SQL store with aliases only:
    no alias, stage None, and no endpoint listing it."""
    urn, aspect = record.get("entityUrn", ""), record.get("aspectName")
    if "churn_model_" not in urn or "mlModel:" not in urn:
        return record
    body = json.loads(json.dumps(record["aspect"]["json"]))
    if aspect == "versionProperties":
        body["aliases"] = []
    elif aspect == "globalTags":
        body["tags"] = [{"tag": "urn:li:tag:mlflow_none"}]
    elif aspect == "mlModelProperties":
        body["deployments"] = []
    return {**record, "aspect": {"json": body}}


def shop_as(tmp_path: Path, shape: Callable[[dict[str, Any]], dict[str, Any]]) -> Settings:
    """The foreign estate with each record reshaped by ``shape``, in a Lite file, its overlay beside it."""
    records = [shape(r) for r in json.loads((FIXTURES / "estate_stock.json").read_text())]
    fixture = tmp_path / "reshaped.json"
    fixture.write_text(json.dumps(records))
    db = ingest(tmp_path / "shop.db", str(fixture))
    (tmp_path / "recall.yaml").write_text(json.dumps(OVERLAY))
    return Settings(home=tmp_path / "home", graph=str(db), mlflow_tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")


def fail_the_test(shop: Settings) -> None:
    """The team's next dbt run fails its not_null test, and DataHub's dbt source reports it."""
    ingest(Path(shop.graph), str(FIXTURES / "failing_run.json"))


# -- the team's Dagster code around the estate ------------------------------------------------------
CHURN = AssetKey(["shop", "churn_model"])
GATE = AssetKey(["shop", "churn_model_retrain_gate"])
READS = [AssetKey(["marts", "customer_orders"])]
OVERRIDE = {OVERRIDE_BY_TAG: "ana@shop.example", OVERRIDE_REASON_TAG: "the failing test is the known late-orders lag"}


def registering(uri: str) -> AssetsDefinition:
    """The team's training as they wrote it: it registers a new churn_model version in their MLflow."""

    @asset(key=CHURN, deps=READS)
    def train_churn(context: AssetExecutionContext) -> MaterializeResult:
        version = register(uri)
        context.log.info(f"registered churn_model {version}")
        return MaterializeResult(metadata={"version": version})

    return train_churn


def register(uri: str) -> int:
    client = MlflowClient(tracking_uri=uri, registry_uri=uri)
    if not client.search_registered_models("name = 'churn_model'"):
        client.create_registered_model("churn_model")
    return int(client.create_model_version("churn_model", source="file:///nowhere").version)


def versions(shop: Settings) -> dict[int, dict[str, str]]:
    client = MlflowClient(tracking_uri=shop.mlflow_uri, registry_uri=shop.mlflow_uri)
    if not client.search_registered_models("name = 'churn_model'"):
        return {}
    return dict(sorted((int(v.version), dict(v.tags)) for v in client.search_model_versions("name = 'churn_model'")))


def location(shop: Settings, overlay: str, training: AssetsDefinition) -> Definitions:
    resource = RecallResource.from_settings(shop, config_path=overlay)
    return Definitions(
        assets=retrain_gate(training, "churn_model"),
        jobs=[define_asset_job("train_only", [CHURN]), define_asset_job("gated", [GATE, CHURN])],
        resources={"recall": resource},
    )


def launch(defs: Definitions, instance: DagsterInstance, job: str, **kwargs: Any) -> ExecuteInProcessResult:
    return defs.resolve_job_def(job).execute_in_process(instance=instance, raise_on_error=False, **kwargs)


def trained(result: ExecuteInProcessResult) -> dict[str, Any] | None:
    """The training's materialization metadata, or None when it did not materialize."""
    events = [e for e in result.get_asset_materialization_events() if e.asset_key == CHURN]
    return {k: v.value for k, v in events[0].materialization.metadata.items()} if events else None


def refusal(result: ExecuteInProcessResult) -> tuple[str, dict[str, Any]]:
    [failure] = result.get_step_failure_events()
    data = failure.step_failure_data.user_failure_data
    assert data is not None, failure.step_failure_data.error
    return data.description or "", {k: v.value for k, v in data.metadata.items()}
