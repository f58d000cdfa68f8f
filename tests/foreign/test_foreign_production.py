"""Production as a stock stack records it: the mlflow source leaves aliases out (MLflow 2.20's search returns none),
so the registry itself is asked; a registered model nothing marks is named and unverified, never a silent pass."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from foreign_estate import shop_as, stock
from mlflow import MlflowClient

from recall_dagster.cli import cli
from recall_dagster.settings import Settings

CHURN = "urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,churn_model,PROD)"


@pytest.fixture
def shop(tmp_path: Path) -> Settings:
    return shop_as(tmp_path, stock)


def scan(shop: Settings, *flags: str, as_json: bool = True, as_of: str | None = "2025-06-01T00:00:00Z"
         ) -> tuple[int, Any]:
    args = ["scan", "--graph", shop.graph, "--config", str(Path(shop.graph).with_name("recall.yaml")),
            *(["--as-of", as_of] if as_of else []), *(["--json"] if as_json else []), *flags]
    env = {"RECALL_HOME": str(shop.home), "MLFLOW_TRACKING_URI": shop.mlflow_uri}
    done = CliRunner().invoke(cli, args, env=env, terminal_width=200)
    return done.exit_code, json.loads(done.output) if as_json and done.exit_code in (0, 1, 4) else done.output


def registry(shop: Settings, alias: str | None) -> None:
    """The team's MLflow: churn_model versions 1 and 2, ``alias`` (if any) on version 2."""
    client = MlflowClient(tracking_uri=shop.mlflow_uri, registry_uri=shop.mlflow_uri)
    client.create_registered_model("churn_model")
    for _ in range(2):
        client.create_model_version("churn_model", source="file:///nowhere")
    if alias:
        client.set_registered_model_alias("churn_model", alias, "2")


def test_a_registered_model_nothing_marks_is_named_and_unverified(shop: Settings) -> None:
    code, body = scan(shop)
    assert code == 4, "never a silent exit 0 while a registered model goes unjudged"
    assert [m["name"] for m in body["models"]] == ["ltv_model_1"]
    assert body["coverage"]["registered_unmarked"] == ["churn_model"]
    code, text = scan(shop, as_json=False)
    assert code == 4 and "UNVERIFIED: nothing marks a version of churn_model as production" in text
    code, text = scan(shop, "--model", "churn_model", as_json=False)
    assert code == 4, text
    assert "no version of churn_model (version 1, 2) is marked production" in text
    assert "Name a version (churn_model/2)" in text


def test_the_registry_s_alias_marks_production_whatever_its_case(shop: Settings) -> None:
    registry(shop, "Champion")
    code, body = scan(shop)
    assert code in (0, 1) and body["coverage"]["registered_unmarked"] == []
    assert {m["name"]: m["production"] for m in body["models"]} == {"churn_model_2": True, "ltv_model_1": True}


def test_a_registry_alias_that_marks_no_production_is_named_but_not_unverified(shop: Settings) -> None:
    registry(shop, "staging")
    code, body = scan(shop)
    assert code in (0, 1), "a model the registry keeps in staging is known not to be in production"
    assert body["coverage"]["registered_without_production"] == ["churn_model"]
    assert body["coverage"]["registered_unmarked"] == []


def ownerless(record: dict[str, Any]) -> dict[str, Any]:
    """The stock estate as the sources write it, with nobody owning the churn versions or their group."""
    urn = record.get("entityUrn", "")
    if record.get("aspectName") == "ownership" and "churn_model" in urn:
        return {**record, "aspect": {"json": {"owners": []}}}
    return stock(record)


IN_A_MONTH = (datetime.now(timezone.utc) + timedelta(days=30)).date().isoformat()  # within max_days


def ack(shop: Settings, subject: str, model: str) -> None:
    args = ["ack", "ownership_vacuum", subject, "--model", model, "--reason", "owners come with the reorg",
            "--until", IN_A_MONTH, "--graph", shop.graph, "--config", str(Path(shop.graph).with_name("recall.yaml"))]
    done = CliRunner().invoke(cli, args, env={"RECALL_HOME": str(shop.home), "RECALL_USER": "ana"})
    assert done.exit_code == 0, done.output


def acknowledged(shop: Settings) -> dict[str, bool]:
    _, body = scan(shop, "--all", as_of=None)  # acknowledged now: in force from now on
    return {m["name"]: any(f["acknowledged"] for f in m["findings"] if f["subject"] == m["urn"]
                           and f["detector"] == "ownership_vacuum") for m in body["models"] if "churn" in m["name"]}


@pytest.fixture
def ownerless_shop(tmp_path: Path) -> Settings:
    return shop_as(tmp_path, ownerless)


def test_an_acknowledgement_for_one_version_covers_that_version_only(ownerless_shop: Settings) -> None:
    ack(ownerless_shop, "churn_model_1", "churn_model/1")
    assert acknowledged(ownerless_shop) == {"churn_model_1": True, "churn_model_2": False}


def test_an_acknowledgement_for_the_registered_model_covers_every_version(ownerless_shop: Settings) -> None:
    ack(ownerless_shop, "churn_model_1", "churn_model")
    assert acknowledged(ownerless_shop) == {"churn_model_1": True, "churn_model_2": True}, (
        "the finding on the model itself is accepted for the registered model: a retrain does not bring it back")
