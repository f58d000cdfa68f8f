"""Triage from the Dagster UI after ``seed break``, as an operator does it: the real webserver and daemon, the
scan and the retrain launched from the webserver, and what its GraphQL endpoint (the pages' own source) then
says of the model, the refused retrain and each of Recall's assets."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any, Iterator

import pytest

from recall_dagster.progress import Progress
from recall_dagster.settings import Settings
from seed import lifecycle
from tests.conftest import built_estate
from tests.dagster.test_dagster_dev import SCRIPT

pytestmark = [pytest.mark.stack, pytest.mark.slow]

RECALL_ASSETS = ("model_closures", "risk_findings", "impact_tests", "risk_scores", "datahub_writeback",
                 "data_incidents", "blind_window")


@pytest.fixture(scope="module")
def seen(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    with built_estate(tmp_path_factory.mktemp("triage")) as settings:
        lifecycle.break_estate(settings, Progress(quiet=True))
        yield _triage(settings)


def _triage(settings: Settings) -> dict[str, Any]:
    done = subprocess.run([sys.executable, str(SCRIPT), "--recall-home", str(settings.home), "--triage"],
                          capture_output=True, text=True, timeout=1200)
    log = settings.home / "dagster-dev.log"
    assert done.returncode == 0, done.stderr[-3000:] + (log.read_text()[-3000:] if log.exists() else "")
    return json.loads(done.stdout)


def test_the_model_itself_turns_red_with_its_reason_in_one_line(seen: dict[str, Any]) -> None:
    assert seen["scan"]["status"] == "SUCCESS"
    verdict = seen["verdict"]
    assert verdict["status"] == "FAILED", "after the refused retrain, the model's own check still says CRITICAL"
    assert verdict["description"].startswith("fraud_detector_") and " CRITICAL " in verdict["description"]
    assert "Next: " in verdict["description"] and "\n" not in verdict["description"]
    scores = seen["summaries"]["risk_scores"]
    assert any(label.startswith("verdict: fraud_detector_") for label in scores), "the scores say why, per model"


def test_a_refused_retrain_reads_as_a_refusal_not_a_crash(seen: dict[str, Any]) -> None:
    retrain = seen["retrain"]
    assert retrain["status"] == "SUCCESS" and retrain["failed_steps"] == [], "nothing crashed: a retrain was refused"
    assert retrain["tags"]["recall/retrain_gate/fraud_detector"] == "NO-GO"
    assert {"ml__fraud_detector", "ml__fraud_detector_promotion"} <= set(retrain["skipped_steps"])
    [refusal] = [e for e in retrain["errors"] if "retrain fraud_detector:" in e]
    assert refusal.startswith("Recall's retrain gate refuses to retrain fraud_detector: NO-GO: ")
    assert "recall/gate_override_by" in refusal and "Traceback" not in refusal and "Stack" not in refusal
    assert seen["gate"]["status"] == "FAILED" and seen["gate"]["description"].startswith("NO-GO: ")
    assert seen["metric_gate"]["status"] == "SKIPPED", "a check of a training that never ran is skipped, not failed"


def test_every_recall_asset_opens_with_one_plain_line(seen: dict[str, Any]) -> None:
    summaries = seen["summaries"]
    assert set(summaries) == set(RECALL_ASSETS)
    for asset, said in summaries.items():
        assert next(iter(said)) == "summary" and "\n" not in said["summary"], asset
    window = summaries["blind_window"]["summary"]
    assert window.startswith("live on bad data: ") and "fraud_detector_2" in window
    assert "fraud_detector: roll back to fraud_detector_1" in window, "the rollback, said where the table is"


def test_the_rollback_is_one_link_to_a_launchpad_filled_in_that_launches(seen: dict[str, Any]) -> None:
    link = seen["summaries"]["blind_window"]["rollback: fraud_detector"]
    assert link.startswith("/locations/__repository__@recall/jobs/recall_rollback/playground/setup?config="), (
        "relative to the webserver that shows it, whatever its address and port")
    filled = seen["rollback_as_filled"]
    assert filled["status"] == "FAILURE", "launched as filled by nobody Dagster knows: refused by name"
    assert any("name who rolls back fraud_detector" in m and "nothing was moved" in m for m in filled["failures"])
    named = seen["rollback_named"]
    assert named["status"] == "SUCCESS" and named["failed_steps"] == []
    assert named["tags"]["recall/rollback/fraud_detector"] == "version 1 by triage@recall.example"
