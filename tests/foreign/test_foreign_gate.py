"""The retrain gate holds however the team launches its training: alone, in its own job, per partition, and an
override past it is named, kept on the materialization and set on the version it registered in MLflow."""

from typing import Iterator

from dagster import (
    AssetExecutionContext,
    Definitions,
    MaterializeResult,
    StaticPartitionsDefinition,
    asset,
    define_asset_job,
)
from foreign_estate import (
    CHURN,
    GATE,
    OVERRIDE,
    READS,
    fail_the_test,
    launch,
    location,
    refusal,
    register,
    registering,
    trained,
    versions,
)

from recall_dagster.defs import RecallResource, retrain_gate
from recall_dagster.lifecycle.override import OVERRIDE_BY_TAG, OVERRIDE_REASON_TAG
from recall_dagster.settings import Settings
from tests.gate_runs import withheld

def test_a_job_that_selects_only_the_training_asks_the_gate_first(shop: Settings, overlay: str, instance) -> None:
    defs = location(shop, overlay, registering(shop.mlflow_uri))
    healthy = launch(defs, instance, "train_only")
    assert healthy.success
    assert trained(healthy)["recall_gate"] == "GO (asked by the training step: the gate was not part of this run)"
    assert list(versions(shop)) == [1]

    fail_the_test(shop)
    refused = launch(defs, instance, "train_only")
    assert not refused.success and trained(refused) is None
    assert list(versions(shop)) == [1], "the refused retrain registered nothing"
    why, metadata = refusal(refused)
    assert why.startswith("Recall's retrain gate refuses to retrain churn_model: NO-GO: ")
    assert {"failing_assertions", "contaminated_version"} <= set(metadata["failing_checks"].split(", "))
    assert metadata["verdict"] == "NO-GO" and "| failing_assertions | FAIL |" in metadata["checks"]
    assert OVERRIDE_BY_TAG in why, "the refusal says how to retrain anyway"
    assert instance.get_run_by_id(refused.run_id).tags["recall/retrain_gate/churn_model"] == "NO-GO"


def test_a_model_the_graph_does_not_know_blocks_a_training_launched_alone(shop: Settings, overlay: str,
                                                                           instance) -> None:
    resource = RecallResource.from_settings(shop, config_path=overlay)
    defs = Definitions(assets=retrain_gate(registering(shop.mlflow_uri), "never_registered"),
                       jobs=[define_asset_job("train_only", [CHURN])], resources={"recall": resource})
    refused = launch(defs, instance, "train_only")
    assert not refused.success and versions(shop) == {}
    why, metadata = refusal(refused)
    assert why.startswith("Recall's retrain gate refuses to retrain never_registered: UNVERIFIED: no registered model")
    assert metadata["verdict"] == "UNVERIFIED"


def test_an_override_trains_and_the_version_carries_who_and_why(shop: Settings, overlay: str, instance) -> None:
    defs = location(shop, overlay, registering(shop.mlflow_uri))
    assert launch(defs, instance, "train_only").success
    fail_the_test(shop)
    overridden = launch(defs, instance, "train_only", tags=OVERRIDE)
    assert overridden.success
    metadata = trained(overridden)
    assert metadata["gate_override_by"] == "ana@shop.example" and metadata["gate_overridden_verdict"] == "NO-GO"
    assert metadata["gate_override_reason"] == OVERRIDE[OVERRIDE_REASON_TAG]
    assert metadata["version"] == 2
    tags = instance.get_run_by_id(overridden.run_id).tags
    assert tags["recall/retrain_gate/churn_model"] == "NO-GO, overridden by ana@shop.example"
    registered = versions(shop)
    assert list(registered) == [1, 2] and registered[1] == {}, "a version the gate passed carries no override"
    assert registered[2] == {
        "recall.gate.override_by": "ana@shop.example", "recall.gate.override_reason": OVERRIDE[OVERRIDE_REASON_TAG],
        "recall.gate.verdict": "NO-GO", "recall.gate.dagster_run": overridden.run_id,
    }


def test_half_an_override_is_refused_and_trains_nothing(shop: Settings, overlay: str, instance) -> None:
    defs = location(shop, overlay, registering(shop.mlflow_uri))
    fail_the_test(shop)
    result = launch(defs, instance, "train_only", tags={OVERRIDE_BY_TAG: "ana@shop.example"})
    assert not result.success and versions(shop) == {}
    why, _ = refusal(result)
    assert f"this run has no {OVERRIDE_REASON_TAG} tag" in why


def test_in_a_gated_run_the_override_passes_the_gate_and_marks_the_version(shop: Settings, overlay: str,
                                                                           instance) -> None:
    defs = location(shop, overlay, registering(shop.mlflow_uri))
    register(shop.mlflow_uri)
    fail_the_test(shop)
    refused = launch(defs, instance, "gated")
    line, metadata = withheld(refused, GATE)
    assert trained(refused) is None and list(versions(shop)) == [1]
    assert line.startswith("NO-GO: ") and "failing_assertions" in line and line == metadata["summary"]
    assert instance.get_run_by_id(refused.run_id).tags["recall/retrain_gate/churn_model"] == "NO-GO"

    overridden = launch(defs, instance, "gated", tags=OVERRIDE)
    assert overridden.success
    checks = {c.asset_check_key.name: c for c in overridden.get_asset_check_evaluations()}
    assert checks["retrain_gate"].passed and checks["retrain_gate"].metadata["verdict"].value == "NO-GO"
    assert checks["retrain_gate"].metadata["gate_override_by"].value == "ana@shop.example"
    metadata = trained(overridden)
    assert metadata["recall_gate"] == "NO-GO (judged by shop/churn_model_retrain_gate in this run)"
    assert versions(shop)[2]["recall.gate.override_by"] == "ana@shop.example" and versions(shop)[1] == {}


def test_each_partition_is_judged_whether_or_not_the_gate_runs_with_it(shop: Settings, overlay: str,
                                                                       instance) -> None:
    uri = shop.mlflow_uri

    @asset(key=CHURN, deps=READS, partitions_def=StaticPartitionsDefinition(["eu", "us"]))
    def train_per_region(context: AssetExecutionContext) -> Iterator[MaterializeResult]:
        yield MaterializeResult(metadata={"version": register(uri), "region": context.partition_key})

    defs = location(shop, overlay, train_per_region)
    gate = next(a for a in defs.assets if GATE in a.keys)
    assert gate.partitions_def == train_per_region.partitions_def, "the gate runs beside each partition"
    assert launch(defs, instance, "train_only", partition_key="eu").success
    assert launch(defs, instance, "gated", partition_key="us").success
    fail_the_test(shop)
    refused = launch(defs, instance, "train_only", partition_key="eu")
    assert not refused.success and trained(refused) is None, "asked alone, the training fails on the refusal"
    withheld(launch(defs, instance, "gated", partition_key="eu"), GATE)
    assert list(versions(shop)) == [1, 2]
