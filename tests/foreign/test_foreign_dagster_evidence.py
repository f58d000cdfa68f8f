"""A Dagster + dbt team whose DataHub holds no operations: the gate learns when the training's input was last
written, and how many rows it held, from Dagster's own materializations, and says that Dagster told it."""

from __future__ import annotations

import importlib
import json
import time
from datetime import timedelta
from pathlib import Path

import pytest
import yaml
from dagster import DagsterInstance, Definitions, FreshnessPolicy, MaterializeResult, asset, define_asset_job
from foreign_estate import CHURN, FIXTURES, GATE, READS, launch, refusal, registering, trained
from mlflow import MlflowClient

from recall_dagster.clock import clock_ms
from recall_dagster.defs import RecallResource, retrain_gate
from recall_dagster.instants import HOUR_MS
from recall_dagster.settings import Settings
from tests.scan.scan_estates import ingest

TABLE = "shop.marts.customer_orders"


@pytest.fixture
def quiet_shop(tmp_path: Path) -> Settings:
    """The foreign estate without its ``operation`` aspects: DataHub cannot tell when anything changed."""
    mcps = [m for m in json.loads((FIXTURES / "estate_stock.json").read_text()) if m["aspectName"] != "operation"]
    (tmp_path / "quiet.json").write_text(json.dumps(mcps))
    db = ingest(tmp_path / "shop.db", str(tmp_path / "quiet.json"))
    return Settings(home=tmp_path / "home", graph=str(db), mlflow_tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")


def window(tmp_path: Path, hours: float) -> str:
    path = tmp_path / f"window-{hours}.yaml"
    path.write_text(yaml.safe_dump({"freshness": {"default_window_hours": hours}}))
    return str(path)


def team(shop: Settings, overlay: str, policy: FreshnessPolicy | None = None) -> Definitions:
    """The team's code: the dbt model as an asset Dagster materializes (named as dagster-dbt names it, with the
    rows it wrote, held to the team's freshness ``policy``), the training behind Recall's gate."""

    @asset(key=READS[0], metadata={"dagster/table_name": TABLE}, freshness_policy=policy)
    def customer_orders() -> MaterializeResult:
        return MaterializeResult(metadata={"dagster/row_count": 1000})

    return Definitions(
        assets=[customer_orders, *retrain_gate(registering(shop.mlflow_uri), "churn_model")],
        jobs=[define_asset_job("refresh", READS), define_asset_job("train_only", [CHURN]),
              define_asset_job("gated", [GATE, CHURN])],
        resources={"recall": RecallResource.from_settings(shop, config_path=overlay)},
    )


def test_without_any_freshness_record_the_gate_says_what_it_looked_for(quiet_shop: Settings, tmp_path: Path,
                                                                        instance: DagsterInstance) -> None:
    refused = launch(team(quiet_shop, window(tmp_path, 10_000_000)), instance, "train_only")
    assert not refused.success and trained(refused) is None
    _, metadata = refusal(refused)
    assert metadata["verdict"] == "UNVERIFIED" and "input_freshness" in metadata["unverified_checks"]
    assert "the last materialization of the asset writing it" in metadata["check_details"]


def test_dagster_s_materialization_is_the_freshness_the_gate_judges(quiet_shop: Settings, tmp_path: Path,
                                                                     instance: DagsterInstance) -> None:
    defs = team(quiet_shop, window(tmp_path, 10_000_000))
    assert launch(defs, instance, "refresh").success
    gated = launch(defs, instance, "gated")
    assert gated.success and trained(gated) is not None, "fresh by Dagster's word: the retrain goes"
    [gate] = [e.materialization.metadata for e in gated.get_asset_materialization_events() if e.asset_key == GATE]
    assert gate["verdict"].value == "GO"
    details = gate["check_details"].value
    assert f"{TABLE} last changed 0.0 h ago (Dagster asset marts/customer_orders, run " in details, details

    stale = team(quiet_shop, window(tmp_path, 0.0005))  # 1.8 s
    assert launch(stale, instance, "refresh").success
    time.sleep(2.5)
    before = MlflowClient(tracking_uri=quiet_shop.mlflow_uri).search_model_versions("name = 'churn_model'")
    refused = launch(stale, instance, "train_only")
    assert not refused.success and trained(refused) is None
    why, metadata = refusal(refused)
    assert metadata["verdict"] == "NO-GO" and "input_freshness" in metadata["failing_checks"], why
    assert "(Dagster asset marts/customer_orders, run " in metadata["check_details"], "the stale input's source"
    after = MlflowClient(tracking_uri=quiet_shop.mlflow_uri).search_model_versions("name = 'churn_model'")
    assert len(after) == len(before), "nothing was trained"


def test_a_freshness_policy_the_team_declared_in_dagster_is_the_window_the_gate_holds_the_input_to(
    quiet_shop: Settings, tmp_path: Path, instance: DagsterInstance, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """recall.yaml gives the table years; the team's Dagster policy gives it an hour: two hours after the
    refresh the gate refuses, naming the policy as the window."""
    hourly = team(quiet_shop, window(tmp_path, 10_000_000), FreshnessPolicy.time_window(fail_window=timedelta(hours=1)))
    assert launch(hourly, instance, "refresh").success
    assert launch(hourly, instance, "gated").success, "just refreshed: within the policy's hour"
    later = clock_ms() + 2 * HOUR_MS
    # the module itself: the package's attribute of the same name is the retrain_gate() factory
    monkeypatch.setattr(importlib.import_module("recall_dagster.defs.retrain_gate"), "clock_ms", lambda: later)
    refused = launch(hourly, instance, "train_only")
    assert not refused.success and trained(refused) is None
    why, metadata = refusal(refused)
    assert metadata["verdict"] == "NO-GO" and "input_freshness" in metadata["failing_checks"], why
    assert "past its 1 h window (Dagster's freshness policy)" in metadata["check_details"]

