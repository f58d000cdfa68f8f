"""A failing dbt test is found by every name the team calls it, and one on a table no model reads is an answer
(nothing trained on it), said by the blind window and the incident sync rather than hidden behind "0 causes"."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from foreign_estate import FIXTURES, OVERLAY, fail_the_test

from recall_dagster.cli import cli
from recall_dagster.settings import Settings
from tests.scan.scan_estates import ingest

PAYMENTS = "urn:li:dataset:(urn:li:dataPlatform:postgres,shop.staging.stg_payments,PROD)"
PAYMENTS_DBT = "urn:li:dataset:(urn:li:dataPlatform:dbt,shop.staging.stg_payments,PROD)"
TEST = "urn:li:assertion:shop-not-null-stg-payments-amount"
UNIQUE_ID = "test.shop.not_null_stg_payments_amount.8a7b6c5d4e"
ORDERS = "urn:li:dataset:(urn:li:dataPlatform:postgres,shop.marts.customer_orders,PROD)"
ORDERS_DBT = "urn:li:dataset:(urn:li:dataPlatform:dbt,shop.marts.customer_orders,PROD)"


def mcp(urn: str, aspect: str, body: dict[str, Any]) -> dict[str, Any]:
    kind = urn.split(":")[2]
    return {"entityType": kind, "entityUrn": urn, "changeType": "UPSERT", "aspectName": aspect,
            "aspect": {"json": body}}


def unread_table() -> list[dict[str, Any]]:
    """A dbt staging model no model reads, its warehouse twin, and its not_null test failing, as DataHub's dbt
    source writes them."""
    field = f"urn:li:schemaField:({PAYMENTS},amount)"
    copy = {"auditStamp": {"time": 0, "actor": "urn:li:corpuser:unknown"}, "dataset": ORDERS, "type": "COPY"}
    return [
        mcp(ORDERS_DBT, "upstreamLineage", {"upstreams": [copy]}),  # the dbt node of the table the model reads
        mcp(ORDERS_DBT, "datasetProperties", {"name": "customer_orders",
                                              "customProperties": {"dbt_unique_id": "model.shop.customer_orders"}}),
        mcp(PAYMENTS_DBT, "upstreamLineage", {"upstreams": [
            {"auditStamp": {"time": 0, "actor": "urn:li:corpuser:unknown"}, "dataset": PAYMENTS, "type": "COPY"}]}),
        mcp(PAYMENTS, "datasetProperties", {"name": "stg_payments", "customProperties": {}}),
        mcp(TEST, "assertionInfo", {
            "type": "CUSTOM", "customProperties": {"dbt_unique_id": UNIQUE_ID}, "source": {"type": "EXTERNAL"},
            "customAssertion": {"type": "dbt", "entity": PAYMENTS, "field": field, "logic": "amount is null"},
        }),
        mcp(TEST, "assertionRunEvent", {
            "timestampMillis": 1748734200000, "runId": "inv-2", "asserteeUrn": PAYMENTS, "assertionUrn": TEST,
            "status": "COMPLETE", "result": {"type": "FAILURE", "nativeResults": {"failures": "3"}},
        }),
    ]


@pytest.fixture
def shop(tmp_path: Path) -> Settings:
    extra = tmp_path / "unread.json"
    extra.write_text(json.dumps(unread_table()))
    db = ingest(tmp_path / "shop.db", str(FIXTURES / "estate_stock.json"), str(extra))
    (tmp_path / "recall.yaml").write_text(json.dumps(OVERLAY))
    return Settings(home=tmp_path / "home", graph=str(db), mlflow_tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")


def recall(shop: Settings, *args: str) -> tuple[int, dict[str, Any]]:
    config = str(Path(shop.graph).with_name("recall.yaml"))
    done = CliRunner().invoke(cli, [*args, "--json", "--graph", shop.graph, "--config", config],
                              env={"RECALL_HOME": str(shop.home)})
    return done.exit_code, json.loads(done.output) if done.output.startswith("{") else {"output": done.output}


def unlinked(body: dict[str, Any]) -> list[tuple[str, str]]:
    return [(u["urn"], u["result"]) for u in body["unlinked_failing"]]


@pytest.mark.parametrize("name", ["not_null_stg_payments_amount", UNIQUE_ID, TEST])
def test_a_failing_test_no_model_reaches_is_an_answer_by_any_of_its_names(shop: Settings, name: str) -> None:
    code, window = recall(shop, "blind-window", name)
    assert code == 0, window
    assert window["causes"] == [] and window["contaminated_live"] == []
    assert unlinked(window["coverage"]) == [(TEST, "FAILURE")], "said: it fails, and it reaches no model"


def test_without_a_target_the_blind_window_and_the_incidents_say_what_they_could_not_link(shop: Settings) -> None:
    code, window = recall(shop, "blind-window")
    assert code == 0 and unlinked(window["coverage"]) == [(TEST, "FAILURE")]
    code, synced = recall(shop, "incidents", "sync")
    assert code == 0 and synced["raised"] == [] and unlinked(synced) == [(TEST, "FAILURE")]
    done = CliRunner().invoke(cli, ["incidents", "sync", "--graph", shop.graph], env={"RECALL_HOME": str(shop.home)})
    said = " ".join(done.output.split())
    assert "1 failing test(s) reach no model" in said
    assert "not_null_stg_payments_amount on shop.staging.stg_payments" in said, "named as the team names it"


def test_the_scan_says_the_failing_test_no_model_reaches(shop: Settings) -> None:
    """Its coverage names it (and the JSON lists it) rather than pass over a failure it could tie to nothing."""
    code, scanned = recall(shop, "scan")
    assert code in (0, 1, 4) and unlinked(scanned["coverage"]) == [(TEST, "FAILURE")]
    done = CliRunner().invoke(cli, ["scan", "--graph", shop.graph], env={"RECALL_HOME": str(shop.home)})
    said = " ".join(done.output.split())
    assert "1 failing assertion(s) on data no scanned model reads: not_null_stg_payments_amount" in said
    code, one = recall(shop, "scan", "--as-of", "2025-05-01T00:00:00Z")
    assert unlinked(one["coverage"]) == [], "before its failing run, the test was not failing"


def test_a_linked_test_is_found_by_its_dbt_name(shop: Settings) -> None:
    fail_the_test(shop)
    code, window = recall(shop, "blind-window", "not_null_customer_orders_total_amount")
    assert code == 1 and window["contaminated_live"] == ["churn_model_2"], "it holds the production alias"
    assert window["assertions"] == ["urn:li:assertion:shop-not-null-total-amount"] and window["causes"]


def test_a_name_nothing_answers_to_is_still_refused(shop: Settings) -> None:
    code, body = recall(shop, "blind-window", "not_null_nowhere")
    assert code == 2 and "no failing assertion of that name anywhere in the graph" in " ".join(body["output"].split())


@pytest.mark.parametrize("name", [PAYMENTS, "shop.staging.stg_payments", "staging.stg_payments"])
def test_impact_on_a_catalogued_table_no_model_reads_affects_nothing(shop: Settings, name: str) -> None:
    code, report = recall(shop, "impact", name, "--column", "amount", "--mutation", "drop", "--no-write")
    assert code == 0, report
    assert (report["verdict"], report["affected_models"], report["results"]) == ("PASS", 0, [])
    code, body = recall(shop, "impact", "shop.staging.nowhere", "--column", "amount", "--mutation", "drop")
    assert code == 2 and "no dataset named 'shop.staging.nowhere' in the graph" in body["output"]


@pytest.mark.parametrize("name", [ORDERS, ORDERS_DBT, "postgres:shop.marts.customer_orders",
                                  "dbt:shop.marts.customer_orders", "shop.marts.customer_orders",
                                  "marts.customer_orders", "model.shop.customer_orders"])
def test_every_name_of_a_table_a_model_reads_is_that_one_table(shop: Settings, name: str) -> None:
    code, by_urn = recall(shop, "impact", ORDERS, "--column", "total_amount", "--mutation", "drop", "--no-write")
    code_by_name, by_name = recall(shop, "impact", name, "--column", "total_amount", "--mutation", "drop",
                                   "--no-write")
    assert code_by_name == code and by_name.get("dataset") == by_urn["dataset"], by_name
    assert by_name["affected_models"] == by_urn["affected_models"] >= 1
    code, body = recall(shop, "impact", "sqlite:shop.marts.customer_orders", "--column", "total_amount",
                        "--mutation", "drop")
    assert code == 2, "another platform's name is another table"
