"""Adoption by a team whose dbt runs only inside Dagster, through dagster-dbt: no dbt command typed, no copy
step (docs/estate.md's second walkthrough, every line run as written). Recall's ``dbt_metadata`` asset ingests
what dagster-dbt ran. Broken: the failing test stops the build below it, the sensor launches the rescan, and the
scan, the gate and the incident name the test and the frozen training table.
"""

from __future__ import annotations

import json
from typing import Iterator

import pytest

from tests.adoption.team import IN_DAGSTER, Team, bad_load, estate

pytestmark = [pytest.mark.stack, pytest.mark.slow]


@pytest.fixture(scope="module")
def dagster_team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Team]:
    """The team whose dbt runs only inside Dagster, through dagster-dbt."""
    yield from estate(tmp_path_factory, IN_DAGSTER)


def test_inside_dagster_what_dagster_dbt_ran_reaches_the_graph_with_no_copy_step(dagster_team: Team) -> None:
    assert not list(dagster_team.dbt.glob("target/run_results*.json")), "no dbt command was typed, nothing copied"
    code, scan = dagster_team.recall("scan")
    assert code == 0, scan
    assert [(m["name"], m["production"]) for m in scan["models"]] == [("order_forecaster_1", True)]
    assert scan["coverage"]["models"]["with_training_inputs"] == 1
    assert scan["coverage"]["datasets"]["with_freshness"] >= 3, "dagster-dbt's builds say when each table changed"
    code, gate = dagster_team.recall("gate", "order_forecaster")
    tests = next(c for c in gate["checks"] if c["name"] == "failing_assertions")
    assert tests["status"] == "PASS", f"dagster-dbt's test results are in the graph: {tests}"


def test_inside_dagster_a_test_that_froze_the_training_table_is_heard_in_every_answer(dagster_team: Team) -> None:
    """``dbt build`` inside Dagster: the not_null test on the raw amounts fails, dbt skips every model below it
    and Dagster every asset below those, so nothing bad reaches the training table; it is frozen at its last
    good build. The sensor hears the test in Dagster's event log and the rescan ingests what dagster-dbt ran."""
    bad_load(dagster_team)
    nightly = dagster_team.sh("dagster job execute -m jaffle_dagster.definitions -j daily", cwd=dagster_team.repo)
    assert nightly.returncode != 0, "dbt build fails on the failing test"
    assert dagster_team.versions() == [1], "the training sat below the skipped models: no version"
    assert dagster_team.react() == "order_forecaster", "the sensor names the model the failing table feeds"

    code, scan = dagster_team.recall("scan")
    [model] = scan["models"]
    [failing] = [f for f in model["findings"] if f["detector"] == "failing_assertion"]
    frozen = [entry["table"] for entry in failing["evidence"].get("frozen", [])]
    assert any(t.endswith("main.daily_orders,PROD)") for t in frozen), failing
    assert "raw_orders" in failing["message"] and "daily_orders" in failing["message"], failing["message"]
    code, gate = dagster_team.recall("gate", "order_forecaster")
    tests = next(c for c in gate["checks"] if c["name"] == "failing_assertions")
    assert tests["status"] in ("WARN", "FAIL") and "daily_orders" in json.dumps(tests), tests
    code, synced = dagster_team.recall("incidents", "sync")
    named = [m["name"] for i in synced["raised"] + synced["active"] for m in i["models"]]
    assert "order_forecaster_1" in named, synced


def test_inside_dagster_the_scan_turns_the_model_s_own_asset_red(dagster_team: Team) -> None:
    """The scan job, launched from the code location as the daemon launches it, records Recall's verdict on the
    team's own training asset: the operator sees the model at risk in the lineage they already watch."""
    launched = dagster_team.sh("dagster job execute -m jaffle_dagster.definitions -j recall_scan", cwd=dagster_team.repo)
    assert launched.returncode == 0, launched.stdout[-3000:] + launched.stderr[-3000:]
    script = (
        "from dagster import AssetCheckKey, AssetKey, DagsterInstance\n"
        "key = AssetCheckKey(AssetKey('forecast'), 'recall_verdict')\n"
        "record = DagsterInstance.get().event_log_storage.get_latest_asset_check_execution_by_key([key])[key]\n"
        "evaluation = record.event.dagster_event.event_specific_data\n"
        "print(evaluation.passed, evaluation.severity.value, evaluation.metadata['tier'].value, sep='|')\n"
        "print(evaluation.description)\n"
    )
    shown = dagster_team.sh(f"python -c \"{script}\"", cwd=dagster_team.repo)
    assert shown.returncode == 0, shown.stderr[-3000:]
    status, description = shown.stdout.strip().split("\n", 1)
    _, scan = dagster_team.recall("scan")
    [model] = scan["models"]
    assert status == f"False|{'ERROR' if model['tier'] == 'CRITICAL' else 'WARN'}|{model['tier']}", (status, model)
    assert description.startswith(f"order_forecaster_1 {model['tier']} {model['score']}: ") and "Next: " in description
