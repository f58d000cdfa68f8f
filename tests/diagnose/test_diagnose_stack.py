"""``recall diagnose`` on the demo estate: the regression scenario's transform bug found, repaired in a copy and
proven by retraining there; the ambiguous scenario abstained on; the bad load retrained around, with the test
that caught it moved upstream; healthy versions pass the metric gate."""

from __future__ import annotations

import hashlib
import json
import traceback
import subprocess
from pathlib import Path
from typing import Iterator

import pytest
from click.testing import CliRunner

from recall_dagster.cli import cli
from recall_dagster.instants import iso_instant
from recall_dagster.progress import Progress
from recall_dagster.settings import REPO_ROOT, Settings
from tests.contracts.conform import conforms
from tests.conftest import built_estate, point_recall_at
from seed import injuries, lifecycle

pytestmark = [pytest.mark.stack, pytest.mark.slow]


@pytest.fixture(scope="module")
def estate(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    with built_estate(tmp_path_factory.mktemp("diagnose"), scale=0.25) as settings:
        yield settings


@pytest.fixture
def env(estate: Settings, monkeypatch: pytest.MonkeyPatch) -> Settings:
    return point_recall_at(estate, monkeypatch)


def diagnose(*args: str) -> tuple[int, dict]:
    result = CliRunner().invoke(cli, ["diagnose", "fraud_detector", "--json", *args])
    crashed = result.exception is not None and not isinstance(result.exception, SystemExit)
    assert not crashed, "".join(traceback.format_exception(*result.exc_info)) if result.exc_info else result.output
    assert result.exit_code in (0, 1), result.output
    report = json.loads(result.stdout)
    conforms("diagnose", report)
    return result.exit_code, report


def checkout_digest() -> dict[str, str]:
    """Every file git tracks in the checkout, by content: what a repair must never touch."""
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO_ROOT, capture_output=True, text=True, check=True).stdout
    return {p: hashlib.sha256((REPO_ROOT / p).read_bytes()).hexdigest() for p in tracked.split() if (REPO_ROOT / p).is_file()}


def test_the_transform_bug_is_ranked_first_and_its_guard_proven_in_a_copy(env: Settings) -> None:
    before = checkout_digest()
    lifecycle.break_estate(env, Progress(quiet=True), "regression")
    code, report = diagnose()
    assert checkout_digest() == before, "diagnosis edits only its copy, never the working tree"

    assert (code, report["verdict"], report["gate"]["verdict"]) == (1, "REGRESSION", "REGRESSION")
    assert (report["candidate"], report["baseline"]) == ("2", "1"), "the new candidate against the production version"
    ranked = [h["kind"] for h in report["hypotheses"]]
    assert ranked[0] == "feature_transformation", ranked
    [clue] = report["hypotheses"][0]["evidence"]
    assert clue["kind"] == "transform_changed" and clue["fields"] == [injuries.REGRESSED_FEATURE]
    assert {s["name"] for s in report["hypotheses"][0]["signals"]} == {
        "temporal", "lineage", "fields", "size", "corroboration"
    }

    repair = report["repair"]
    assert repair["strategy"] == "guard_division" and repair["validated"], repair["reason"]
    assert "+    trust = 1 / (points).where((points) != 0)" in repair["patch"]
    assert repair["metric"] == report["gate"]["primary"] and repair["metric_after"] > repair["metric_before"]
    evidence = Path(report["record"]["evidence"][1]).read_text()
    assert "## Repair: guard_division (proven in a copy)" in evidence and "```diff" in evidence


def test_a_bad_load_of_the_same_feature_at_the_same_time_is_inconclusive(env: Settings) -> None:
    lifecycle.heal(env, Progress(quiet=True))
    lifecycle.break_estate(env, Progress(quiet=True), "ambiguous")
    code, report = diagnose("--no-repair")
    assert (code, report["verdict"]) == (1, "INCONCLUSIVE"), [(h["kind"], h["score"]) for h in report["hypotheses"]]
    top, second = report["hypotheses"][:2]
    assert {top["kind"], second["kind"]} == {"feature_transformation", "upstream_data_quality"}
    assert top["score"] - second["score"] < 0.1 and report["repair"] is None


def test_heal_undoes_the_scenario_and_a_version_that_did_not_regress_passes(env: Settings) -> None:
    lifecycle.heal(env, Progress(quiet=True))
    assert not injuries.training_registry_path(env).exists()
    code, report = diagnose("--baseline", "1")
    assert (code, report["verdict"], report["hypotheses"]) == (0, "PASS", [])
    assert all(not row["regressed"] for row in report["gate"]["metrics"])


def test_a_bad_load_is_retrained_around_and_the_test_that_caught_it_moved_upstream(env: Settings) -> None:
    before = checkout_digest()
    lifecycle.break_estate(env, Progress(quiet=True), "bad_load")
    code, report = diagnose()
    assert checkout_digest() == before, "the retrain and the dbt test run only in copies"
    assert (code, report["verdict"]) == (1, "REGRESSION"), report["reason"]
    top = report["hypotheses"][0]
    assert top["kind"] == "upstream_data_quality", [(h["kind"], h["score"]) for h in report["hypotheses"]]
    [failing] = [c for c in top["evidence"] if c["kind"] == "assertion_failed"]
    assert "fct_device_features.ip_risk_score" in failing["subject"] and failing["data"]["clean_until_ms"]

    options = [report["repair"], *report["alternatives"]]
    by_strategy = {r["strategy"]: r for r in options}
    assert [r["strategy"] for r in options][-1] == "add_dbt_test", "prevention comes after every repair"
    repairs = [r["validated"] for r in options[:-1]]
    assert repairs == sorted(repairs, reverse=True) and report["repair"]["validated"], "proven repairs lead"
    assert by_strategy["rollback"]["validated"], "the version the blind window proves clean"

    retrain = by_strategy["retrain_before_failure"]
    before = iso_instant(int(failing["data"]["clean_until_ms"]))
    assert f"on the rows loaded before {before}" in retrain["description"], "retrained around the failing streak"
    (run,) = retrain["tried"]
    assert run["ok"] and run["patch"] is None, "the retrain ran in a copy and changes no file"
    assert retrain["metric_after"] == run["metrics"][retrain["metric"]]
    assert retrain["validated"] == retrain["reason"].startswith("retrained in a copy"), retrain["reason"]
    guard = by_strategy["add_dbt_test"]
    assert guard["validated"], guard["reason"]
    assert "dbt_project/models/staging/_staging.yml" in guard["patch"]
    assert "+        data_tests: [not_null, {between: {arguments: {min_value: 0, max_value: 1}}}]" in guard["patch"]
    assert guard["tried"][0]["metrics"]["fail"] == 1, "the moved test fails on the bad load: dbt build would stop"

