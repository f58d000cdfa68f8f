"""``recall rollback`` and the ``recall_rollback`` job on an estate in DataHub's source shapes, with a real MLflow
registry (SQLite) holding churn_model versions 1 and 2, ``production`` on 2, and the team's next dbt run failing:
the blind window convicts version 2 and clears version 1."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from dagster import AssetKey, instance_for_test
from datahub.metadata.schema_classes import DocumentInfoClass
from foreign_estate import fail_the_test, shop_as, stock
from mlflow import MlflowClient

from recall_dagster.cli import cli
from recall_dagster.defs import RecallResource, recall_definitions
from recall_dagster.graph import open_graph
from recall_dagster.lifecycle.rollback import BY, REASON, RUN, WITHDRAWN
from recall_dagster.settings import Settings
from tests.contracts.conform import conforms

V1 = "urn:li:mlModel:(urn:li:dataPlatform:mlflow,churn_model_1,PROD)"
V2 = "urn:li:mlModel:(urn:li:dataPlatform:mlflow,churn_model_2,PROD)"


@pytest.fixture
def shop(tmp_path: Path) -> Settings:
    shop = shop_as(tmp_path, stock)
    client = registry(shop)
    client.create_registered_model("churn_model")
    for _ in range(2):
        client.create_model_version("churn_model", source="file:///nowhere")
    client.set_registered_model_alias("churn_model", "production", "2")
    fail_the_test(shop)
    return shop


def registry(shop: Settings) -> MlflowClient:
    return MlflowClient(tracking_uri=shop.mlflow_uri, registry_uri=shop.mlflow_uri)


def overlay(shop: Settings) -> str:
    return str(Path(shop.graph).with_name("recall.yaml"))


def rollback(shop: Settings, *args: str, as_json: bool = True) -> tuple[int, Any]:
    done = CliRunner().invoke(
        cli, ["rollback", *args, "--graph", shop.graph, "--config", overlay(shop), *(["--json"] if as_json else [])],
        env={"RECALL_HOME": str(shop.home), "MLFLOW_TRACKING_URI": shop.mlflow_uri, "RECALL_USER": "ana"},
        terminal_width=200,
    )
    assert done.exception is None or isinstance(done.exception, SystemExit), done.exception
    return done.exit_code, json.loads(done.stdout) if as_json and done.exit_code in (0, 3) else done.output


def aliases(shop: Settings) -> dict[str, str]:
    return {a: str(v) for a, v in registry(shop).get_registered_model("churn_model").aliases.items()}


def tags(shop: Settings, version: str) -> dict[str, str]:
    return dict(registry(shop).get_model_version("churn_model", version).tags)


def document(shop: Settings, urn: str) -> DocumentInfoClass | None:
    graph = open_graph(shop, read_only=True)
    try:
        return graph.get_aspects([urn], [DocumentInfoClass])[urn].get(DocumentInfoClass.ASPECT_NAME)
    finally:
        graph.close()


def test_a_dry_run_prints_the_plan_and_changes_nothing(shop: Settings) -> None:
    code, text = rollback(shop, "churn_model", "--to", "1", as_json=False)
    assert code == 0, text
    assert "Dry run (nothing written; --apply to roll back)" in text
    assert "move production of churn_model from version 2 to version 1" in text
    assert "target version 1 (churn_model_1): CLEAN, trained before the corruption could have begun" in text
    assert "leaving version 2 (churn_model_2): CONTAMINATED" in text
    code, body = rollback(shop, "churn_model", "--to", "1")
    conforms("rollback", body)
    assert code == 0 and body["applied"] is False and body["after"] is None and body["record"] is None
    assert body["plan"]["moves"] == [{"alias": "production", "from_version": "2"}] and body["plan"]["safe_version"] == "1"
    assert aliases(shop) == {"production": "2"} and tags(shop, "1") == {} and tags(shop, "2") == {}
    assert not (shop.home / "evidence").exists(), "a dry run leaves no evidence: it did nothing"


def test_apply_moves_the_alias_records_who_and_why_and_finds_the_served_version_clean(shop: Settings) -> None:
    code, body = rollback(shop, "churn_model", "--to", "1", "--apply", "--reason", "v2 learnt from the NULL totals")
    assert code == 0, body
    conforms("rollback", body)
    assert aliases(shop) == {"production": "1"}
    mine = tags(shop, "1")
    assert (mine[BY], mine[REASON]) == ("ana", "v2 learnt from the NULL totals") and RUN not in mine
    assert tags(shop, "2")[WITHDRAWN].startswith("churn_model version 1 at ") and "by ana" in tags(shop, "2")[WITHDRAWN]
    record = body["record"]
    assert record["moves"] == [{"alias": "production", "from_version": "2"}] and record["judged"].startswith(
        "version 1 (churn_model_1): CLEAN")
    assert [Path(p).suffix for p in body["evidence"]] == [".json", ".md"]
    assert json.loads(Path(body["evidence"][0]).read_text()) == record, "the evidence holds what was recorded"
    info = document(shop, body["document"])
    assert info is not None and body["writes"] == 1
    assert info.title == "Rollback: churn_model production to version 1"
    assert {a.asset for a in info.relatedAssets} == {V1, V2}
    assert "Rolled back by **ana**" in info.contents.text and "production: version 2 -> version 1" in info.contents.text
    after = body["after"]
    assert after["clean"] and after["served"]["production"]["name"] == "churn_model_1"
    assert after["served"]["production"]["verdict"] == "CLEAN" and after["contaminated_live"] == []
    assert [m["name"] for m in after["scan"]] == ["churn_model_1"], "the rescan scans what production serves now"


def test_a_second_apply_changes_nothing(shop: Settings) -> None:
    _, first = rollback(shop, "churn_model", "--to", "1", "--apply")
    before = (tags(shop, "1"), tags(shop, "2"), document(shop, first["document"]))
    code, again = rollback(shop, "churn_model", "--to", "1", "--apply")
    assert code == 0 and again["plan"]["done"] and again["plan"]["already"] == ["production"]
    assert again["evidence"] == [] and again["writes"] == 0 and again["record"] == first["record"]
    assert again["document"] == first["document"]
    assert (tags(shop, "1"), tags(shop, "2"), document(shop, first["document"])) == before
    assert aliases(shop) == {"production": "1"}
    assert first["record"]["reason"].startswith("the blind window clears version 1 (churn_model_1): CLEAN"), (
        "without --reason, the blind window's verdict is why")


def test_a_document_lost_from_datahub_is_written_again_by_the_next_run(shop: Settings) -> None:
    _, first = rollback(shop, "churn_model", "--to", "1", "--apply")
    (Path(shop.graph).parent / "again").mkdir()
    fresh = shop_as(Path(shop.graph).parent / "again", stock)  # the graph rebuilt, the registry kept
    fresh = Settings(home=shop.home, graph=fresh.graph, mlflow_tracking_uri=shop.mlflow_uri)
    fail_the_test(fresh)
    assert document(fresh, first["document"]) is None
    code, again = rollback(fresh, "churn_model", "--to", "1", "--apply")
    assert code == 0 and again["writes"] == 1 and again["plan"]["done"]
    assert document(fresh, first["document"]).contents.text == document(shop, first["document"]).contents.text


@pytest.mark.parametrize(("args", "said"), [
    (["churn_model", "--to", "7"], "the registry holds no version '7' of churn_model; its versions: 1, 2"),
    (["churn_model/1", "--to", "1"], "'churn_model/1' names one version: give the registered model"),
    (["no_such_model", "--to", "1"], "no_such_model"),
])
def test_bad_usage_exits_2_with_the_reason(shop: Settings, args: list[str], said: str) -> None:
    code, text = rollback(shop, *args, "--apply", as_json=False)
    assert code == 2 and said in text and "Traceback" not in text
    assert aliases(shop) == {"production": "2"}


def test_a_version_the_blind_window_convicts_is_refused_unless_forced_with_a_reason(shop: Settings) -> None:
    rollback(shop, "churn_model", "--to", "1", "--apply")
    code, text = rollback(shop, "churn_model", "--to", "2", "--apply", as_json=False)
    assert code == 2 and "will not roll churn_model back to version 2 (churn_model_2): CONTAMINATED" in text
    assert "the blind window's safe version is 1 (churn_model_1)" in text and "--force" in text
    code, text = rollback(shop, "churn_model", "--to", "2", "--apply", "--force", as_json=False)
    assert code == 2 and "says why (--reason)" in text
    assert aliases(shop) == {"production": "1"}
    code, body = rollback(shop, "churn_model", "--to", "2", "--apply", "--force", "--reason", "v1 misses fraud ring X")
    assert code == 0 and body["plan"]["forced"] and aliases(shop) == {"production": "2"}
    assert not body["after"]["clean"] and body["after"]["served"]["production"]["verdict"] == "CONTAMINATED"


def test_no_production_alias_to_move_is_bad_usage(shop: Settings) -> None:
    registry(shop).delete_registered_model_alias("churn_model", "production")
    registry(shop).set_registered_model_alias("churn_model", "staging", "2")
    code, text = rollback(shop, "churn_model", "--to", "1", as_json=False)
    assert code == 2 and "no version of churn_model carries a production alias" in text


def test_every_production_alias_moves_whatever_its_case(shop: Settings) -> None:
    registry(shop).set_registered_model_alias("churn_model", "Champion", "2")
    code, body = rollback(shop, "churn_model", "--to", "1", "--apply")
    assert code == 0 and aliases(shop) == {"production": "1", "Champion": "1"}
    assert sorted(m["alias"] for m in body["record"]["moves"]) == ["Champion", "production"]


def test_a_missing_registry_is_unreachable(shop: Settings) -> None:
    done = CliRunner().invoke(cli, ["rollback", "churn_model", "--to", "1", "--graph", shop.graph],
                              env={"RECALL_HOME": str(shop.home),
                                   "MLFLOW_TRACKING_URI": f"sqlite:///{shop.home / 'nowhere.db'}"})
    assert done.exit_code == 3 and "no MLflow registry at" in done.output


def test_the_dagster_job_rolls_back_from_the_config_the_blind_window_offers(shop: Settings) -> None:
    defs = recall_definitions(RecallResource.from_settings(shop, config_path=overlay(shop)))
    with instance_for_test() as instance:
        scanned = defs.resolve_job_def("recall_scan").execute_in_process(instance=instance, raise_on_error=False)
        window = next(e for e in scanned.get_asset_materialization_events() if e.asset_key == AssetKey("blind_window"))
        offered = window.materialization.metadata["rollback_run_config"].value
        assert offered.startswith("churn_model: roll back to version 1 (churn_model_1: trained before")
        pasted = yaml.safe_load(offered.split("```yaml\n", 1)[1].split("```", 1)[0])
        assert pasted == {"ops": {"roll_back": {"config": {"model": "churn_model", "to_version": "1", "by": ""}}}}
        job = defs.resolve_job_def("recall_rollback")
        nameless = job.execute_in_process(run_config=pasted, instance=instance, raise_on_error=False)
        [failure] = nameless.get_step_failure_events()
        assert failure.step_failure_data.user_failure_data.description == (
            "name who rolls back churn_model: set by in the launchpad's config (ops.roll_back.config.by); "
            "nothing was moved"), "launched as pasted, by nobody: refused by name, not a config error"
        assert aliases(shop) == {"production": "2"}
        ran = job.execute_in_process(run_config=pasted, instance=instance, tags={"user": "ana"})
        assert ran.success and aliases(shop) == {"production": "1"}
        assert tags(shop, "1")[RUN] == ran.run_id and tags(shop, "1")[BY] == "ana"
        [output] = [e for e in ran.all_node_events if e.event_type_value == "STEP_OUTPUT"]
        metadata = {k: v.value for k, v in output.step_output_data.metadata.items()}
        assert metadata["served_clean"] is True and metadata["moved"] == "production: 2 -> 1"
        assert instance.get_run_by_id(ran.run_id).tags["recall/rollback/churn_model"] == "version 1 by ana"

        pasted["ops"]["roll_back"]["config"]["by"] = "ana"  # the name typed in the launchpad
        again = job.execute_in_process(run_config=pasted, instance=instance)
        assert again.success and tags(shop, "1")[RUN] == ran.run_id, "the second run moved and recorded nothing"
        pasted["ops"]["roll_back"]["config"]["to_version"] = "7"
        refused = job.execute_in_process(run_config=pasted, instance=instance, raise_on_error=False)
        assert not refused.success
        [failure] = refused.get_step_failure_events()
        assert "the registry holds no version '7'" in failure.step_failure_data.user_failure_data.description
