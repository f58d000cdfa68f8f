"""The precision rules on an estate written in DataHub's own source shapes (``precision_estate``), through the CLI
a team runs: a sibling column is suspect, not critical; a streak longer than the page size still names the
rollback, judging every training run; a join that brings in a new input is skew; the newest freshness
evidence wins."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from precision_estate import dataset, write_estate

from recall_dagster.cli import cli
from tests.scan.scan_estates import ingest


@pytest.fixture(scope="module")
def estate(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("precision")
    graph = ingest(root / "graph.db", str(write_estate(root / "estate.json", int(time.time() * 1000))))
    overlay = root / "recall.yaml"
    overlay.write_text(yaml.safe_dump({"closure": {"history_limit": 20}}))
    return {"graph": str(graph), "config": str(overlay), "home": str(root / "home")}


def recall(estate: dict[str, str], *args: str) -> tuple[int, dict[str, Any]]:
    done = CliRunner().invoke(
        cli, [*args, "--json", "--graph", estate["graph"], "--config", estate["config"]], env={"RECALL_HOME": estate["home"]}
    )
    assert done.exit_code in (0, 1, 4), done.output
    return done.exit_code, json.loads(done.output)


def _total(window: dict[str, Any]) -> dict[str, Any]:
    """The root cause of the failing test on mart.total."""
    (cause,) = [c for c in window["causes"] if "shop.raw.lines.amount" in c["origins"]]
    return cause


def test_a_failing_total_leaves_a_model_reading_only_qty_suspect_never_critical(estate: dict[str, str]) -> None:
    _, window = recall(estate, "blind-window")
    cause = _total(window)
    hit = {m["name"]: m for m in cause["blast_radius"]["models"]}
    qty = hit["qty_model_1"]
    assert (qty["poisoned_features"], [f["name"] for f in qty["suspect_features"]]) == (0, ["qty"])
    assert qty["severity"] == "MEDIUM", "it serves traffic, but only shares an origin column with the failure"
    assert hit["total_model_2"]["severity"] == "CRITICAL" and hit["total_model_2"]["poisoned_features"] == 1
    assert (qty["reach"], hit["total_model_2"]["reach"]) == ("suspect", "confirmed")
    versions = {v["name"]: v for m in cause["models"] for v in m["versions"]}
    qty_version = versions["qty_model_1"]
    assert qty_version["verdict"] == "SUSPECT", "trained in the window, on a column sharing only an origin"
    assert "shares only its origin shop.raw.lines.qty with the failing column" in qty_version["reason"]


def test_a_failing_test_on_a_table_the_model_does_not_read_is_the_scan_s_suspect_as_it_is_the_blind_window_s(
    estate: dict[str, str],
) -> None:
    """qty_model reads qty_mart, never marts.mart: the failing test on total lies outside its closure, yet reaches
    it as a suspect through their shared origin. The scan of the estate says so as incidents and the blind window
    do (WARN, never louder, its path through the origin), and total_model, reading total, stays the loud one."""
    _, scan = recall(estate, "scan")
    findings = {m["name"]: [f for f in m["findings"] if f["detector"] == "failing_assertion"] for m in scan["models"]}
    (qty,) = findings["qty_model_1"]
    assert (qty["severity"], qty["evidence"]["reach"]) == ("WARN", "suspect")
    assert "shares only its origin shop.raw.lines.qty with the failing column" in qty["message"]
    assert qty["evidence"]["path"][-2:] == [dataset("marts.mart"), qty["subject"]]
    assert dataset("raw.lines") in qty["evidence"]["path"], "the path runs through the origin the model reads"
    assert {f["evidence"]["reach"] for f in findings["total_model_2"]} == {"confirmed"}
    assert all(f["evidence"]["reach"] == "suspect" for fs in findings.values() for f in fs
               if f["evidence"].get("outside_closure")), "a table no closure holds only ever makes a suspect"
    _, synced = recall(estate, "incidents", "sync")
    reached = {m["name"]: m["reach"] for i in synced["raised"] + synced["active"] for m in i["models"]}
    assert reached["qty_model_1"] == "suspect"
    code, gate = recall(estate, "gate", "qty_model")
    (check,) = [c for c in gate["checks"] if c["name"] == "failing_assertions"]
    assert check["status"] == "WARN" and "shares only its origin shop.raw.lines.qty" in check["details"][0], (
        "the gate warns of the sibling's failing test as the scan does, and never blocks on it")


def test_a_whole_table_input_beside_features_reading_other_columns_is_suspect_not_contaminated(
    estate: dict[str, str],
) -> None:
    """The run logged all of marts.mart; the one feature reads region, derived from none of total's origins: the
    features say what it learned from, so the version is SUSPECT with that reason, in every command."""
    code, window = recall(estate, "blind-window")
    cause = _total(window)
    region = next(m for m in cause["blast_radius"]["models"] if m["name"] == "region_model_1")
    assert (region["reach"], region["severity"]) == ("suspect", "MEDIUM")
    (version,) = next(m for m in cause["models"] if m["name"] == "region_model")["versions"]
    assert version["verdict"] == "SUSPECT" and "logged shop.marts.mart whole as input, but none of its features " \
        "reads shop.marts.mart.total" in version["reason"]
    assert "region_model_1" in window["suspect_live"] and "region_model_1" not in window["contaminated_live"]
    _, scan = recall(estate, "scan", "--model", "region_model")
    (model,) = scan["models"]
    (failing,) = [f for f in model["findings"] if f["detector"] == "failing_assertion"]
    assert (failing["severity"], failing["evidence"]["reach"]) == ("WARN", "suspect")
    _, scan = recall(estate, "scan", "--model", "total_model")
    twins = [f for m in scan["models"] for f in m["findings"] if f["detector"] == "failing_assertion"]
    assert {(f["severity"], f["evidence"]["reach"]) for f in twins} == {("CRITICAL", "confirmed")}
    gates = {name: next(c for c in recall(estate, "gate", name)[1]["checks"] if c["name"] == "failing_assertions")
             for name in ("region_model", "total_model")}
    assert (gates["region_model"]["status"], gates["total_model"]["status"]) == ("WARN", "FAIL")
    assert "it reaches the model only as a suspect: its training logged shop.marts.mart whole" in (
        gates["region_model"]["details"][0])
    _, synced = recall(estate, "incidents", "sync")
    reached = {m["name"]: m["reach"] for i in synced["raised"] + synced["active"] for m in i["models"]}
    assert (reached["region_model_1"], reached["total_model_2"]) == ("suspect", "confirmed")
    _, impact = recall(estate, "impact", "marts.mart", "--column", "total", "--mutation", "null_fraction",
                       "--no-write")
    changed = {r["model"] for r in impact["results"]}
    assert "total_model" in changed and "region_model" not in changed, (
        "a change to total reaches what reads total, never a version that only logged its table whole")


def test_a_streak_longer_than_the_page_still_names_the_rollback_judging_every_run(estate: dict[str, str]) -> None:
    code, window = recall(estate, "blind-window")
    cause = _total(window)
    (failing,) = cause["assertions"]
    assert [w["onset"] is not None for w in failing["windows"]] == [True], "the pass before the 30 failures bounds it"
    total = next(m for m in cause["models"] if m["name"] == "total_model")
    verdicts = {v["name"]: (v["verdict"], v["reason"]) for v in total["versions"]}
    assert verdicts["total_model_1"][0] == "CLEAN"
    status, reason = verdicts["total_model_2"]
    assert status == "CONTAMINATED" and reason.startswith("run total-finetune-2 of 2:"), "fit clean, fine-tuned inside"
    assert total["rollback"]["name"] == "total_model_1"
    assert code == 1 and "total_model_2" in window["contaminated_live"]


def test_a_version_trained_between_the_last_pass_and_a_stamped_change_is_suspect_naming_it(
    estate: dict[str, str],
) -> None:
    """The fee test last passed 4 hours before it failed, and the platform's lastModified stamps the table one hour
    before: that write most likely brought the bad rows, though an earlier one the stamp hides could have. Version 2,
    trained between the pass and the stamp, is SUSPECT naming both; version 3, trained after, is CONTAMINATED;
    version 1, before the pass, stays CLEAN and is the rollback."""
    _, window = recall(estate, "blind-window", "not_null_fees_fee")
    (cause,) = window["causes"]
    (fees,) = cause["models"]
    verdicts = {v["name"]: (v["verdict"], v["reason"]) for v in fees["versions"]}
    assert {name: status for name, (status, _) in verdicts.items()} == {
        "fee_model_1": "CLEAN", "fee_model_2": "SUSPECT", "fee_model_3": "CONTAMINATED"}
    assert "before the table's newest change at" in verdicts["fee_model_2"][1]
    assert cause["window"]["likely_onset"] > cause["window"]["began_after"], "the stamp marks the likely onset"
    assert fees["rollback"]["name"] == "fee_model_1"


def test_a_failing_test_that_stopped_the_builds_below_it_is_a_finding_naming_the_frozen_table(
    estate: dict[str, str],
) -> None:
    """The test on refunds_clean.reason reaches no feature, but dbt build skipped refunds_daily since it failed: the
    scan names the test and the frozen table (WARN), the gate says so without blocking, and the twin whose daily
    table kept being built stays quiet."""
    _, scan = recall(estate, "scan", "--model", "refunds_model")
    (model,) = scan["models"]
    (failing,) = [f for f in model["findings"] if f["detector"] == "failing_assertion"]
    assert failing["severity"] == "WARN" and failing["evidence"]["reach"] is None
    assert [f["table"] for f in failing["evidence"]["frozen"]] == [dataset("marts.refunds_daily")]
    assert "the builds below it were skipped: shop.marts.refunds_daily (last built" in failing["message"]
    code, gate = recall(estate, "gate", "refunds_model")
    check = next(c for c in gate["checks"] if c["name"] == "failing_assertions")
    assert check["status"] == "WARN"
    assert "the builds below it were skipped: shop.marts.refunds_daily (last built" in check["details"][0]
    _, scan = recall(estate, "scan", "--model", "returns_model")
    (twin,) = scan["models"]
    assert [f for f in twin["findings"] if f["detector"] == "failing_assertion"] == []


def test_a_serving_table_joining_a_new_input_is_critical_skew(estate: dict[str, str]) -> None:
    _, scan = recall(estate, "scan", "--model", "risk_model")
    (risk,) = scan["models"]
    (skew,) = [f for f in risk["findings"] if f["detector"] == "training_serving_skew"]
    assert (skew["subject"], skew["severity"]) == (dataset("marts.serving"), "CRITICAL")
    assert skew["evidence"]["unseen_inputs"] == [dataset("raw.bureau")]


def test_an_old_operation_with_a_newer_last_modified_is_not_stale(estate: dict[str, str]) -> None:
    _, scan = recall(estate, "scan", "--model", "risk_model")
    (risk,) = scan["models"]
    stale = {f["subject"] for f in risk["findings"] if f["detector"] == "upstream_staleness"}
    assert stale == {dataset("raw.bureau")}, "raw.events changed an hour ago by its lastModified"


def test_an_endpoint_serving_an_older_version_is_a_version_mismatch_naming_both(estate: dict[str, str]) -> None:
    """The endpoint is listed under the production version but records serving version 1: version 1 serves, and
    the mismatch names the endpoint and both versions; the endpoint serving its production version stays quiet."""
    _, scan = recall(estate, "scan", "--model", "rollout_model")
    found = {m["name"]: [f for f in m["findings"] if f["detector"] == "version_mismatch"] for m in scan["models"]}
    (mismatch,) = found["rollout_model_1"]
    assert mismatch["message"] == ("deployment rollout-west serves rollout_model_1, but the registry's production "
                                   "version is rollout_model_2")
    assert found["rollout_model_2"] == []
    _, scan = recall(estate, "scan", "--model", "steady_model")
    assert [(m["name"], [f["detector"] for f in m["findings"] if f["detector"] == "version_mismatch"])
            for m in scan["models"]] == [("steady_model_2", [])]


def test_a_contaminated_version_serving_by_its_production_mark_fails_the_blind_window(estate: dict[str, str]) -> None:
    code, window = recall(estate, "blind-window")
    versions = {v["name"]: v for c in window["causes"] for m in c["models"] for v in m["versions"]}
    assert versions["alias_model_1"]["verdict"] == "CONTAMINATED" and versions["alias_model_1"]["live_deployments"] == []
    assert code == 1 and "alias_model_1" in window["contaminated_live"], "no deployment entity, but it serves"
