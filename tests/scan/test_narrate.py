"""Narration: every finding, gate verdict and blind window as a paragraph a person acts on, the same every time."""

from __future__ import annotations

import json
import shlex
import sys

import yaml
from click.testing import CliRunner
from scan_closures import closure, ds, feature, urn

from recall_dagster.cli import cli
from recall_dagster.detect import Severity
from recall_dagster.detect.finding import finding
from recall_dagster.estate import Owner
from recall_dagster.rewrite import Rewrite
from recall_dagster.narrate import finding_paragraph, gate_paragraph, window_paragraph
from tests.foreign.foreign_estate import FIXTURES, OVERLAY
from tests.scan.scan_estates import ingest

BOB = (Owner("urn:li:corpuser:bob"),)
GONE = (Owner("urn:li:corpuser:carol", active=False),)


def test_a_finding_says_what_why_whom_and_what_to_do() -> None:
    c = closure(features=[feature("f", "raw")], datasets=[ds("raw", owners=BOB)])
    stale = finding(c, "upstream_staleness", Severity.WARN, urn("raw"), "db.raw last changed 9 days ago", cause=urn("raw"))
    text = finding_paragraph(c, stale)
    assert text.startswith("WARN: db.raw last changed 9 days ago. Why it matters: m_1 is a production version and "
                           "serves live traffic from live.")
    assert "Call bob (owning db.raw)." in text and "What to do: Find out why the table stopped refreshing" in text
    assert finding_paragraph(c, stale) == text, "deterministic"


def test_whom_to_call_falls_back_to_the_model_s_owners_then_to_nobody() -> None:
    c = closure(features=[feature("f", "raw")], datasets=[ds("raw", owners=GONE)])
    orphan = finding(c, "ownership_vacuum", Severity.WARN, urn("raw"), "db.raw has only departed owners", cause=urn("raw"))
    assert "Call alice (owning m_1)." in finding_paragraph(c, orphan), "carol left: the model's owner is called"
    lone = closure(features=[feature("f", "raw")], datasets=[ds("raw", owners=())], owners=())
    nobody = finding(lone, "ownership_vacuum", Severity.WARN, urn("raw"), "nobody owns db.raw", cause=urn("raw"))
    assert "Call nobody: no active owner is recorded." in finding_paragraph(lone, nobody)


def gate(verdict: str, checks: list[dict], skipped: dict[str, str] | None = None, unverified=()) -> dict:
    return {"registered_model": "fraud", "name": "fraud_3", "verdict": verdict, "checks": checks, "reason": None,
            "coverage": {"skipped": skipped or {}}, "unverified_checks": list(unverified)}


def test_a_gate_verdict_reads_as_an_instruction() -> None:
    go = gate_paragraph(gate("GO", [{"name": "risk_tier", "status": "PASS", "summary": "HEALTHY"}],
                             {"row_count_drop": "no counts"}))
    assert go == ("Retraining fraud may go ahead: every check that measured passed (judged on fraud_3). "
                  "1 check(s) could not measure: row_count_drop.")
    no = gate_paragraph(gate("NO-GO", [{"name": "failing_assertions", "status": "FAIL", "summary": "1 failing test"}]))
    assert no.startswith("Do not retrain fraud yet: failing_assertions: 1 failing test.") and "recall ack" in no
    unverified = gate_paragraph(gate("UNVERIFIED", [], {"input_freshness": "no input records when it changes"},
                                     ["input_freshness"]))
    assert "cannot vouch for retraining fraud: input_freshness: no input records when it changes" in unverified


def test_a_blind_window_names_the_contaminated_live_version_and_the_rollback() -> None:
    def version(name: str, verdict: str, live: bool) -> dict:
        return {"name": name, "verdict": verdict, "live_deployments": ["urn:api"] if live else []}

    cause = {"window": {"onset": "2026-11-30T10:00:00+00:00", "open": True},
             "assertions": [{"name": "not_null_price"}],
             "models": [{"name": "fraud", "rollback": {"name": "fraud_2"}, "rollback_note": "fraud_2 is clean",
                         "versions": [version("fraud_3", "CONTAMINATED", True), version("fraud_2", "CLEAN", False)]}]}
    assert window_paragraph(cause) == (
        "The data behind not_null_price was bad from 2026-11-30T10:00:00+00:00 at the earliest, and it still is. "
        "fraud: fraud_3 trained on it, and fraud_3 serves traffic now. Roll back to fraud_2.")


def test_a_configured_rewrite_replaces_the_text_and_any_failure_keeps_the_template() -> None:
    shout = Rewrite(rewrite_command=f"{shlex.quote(sys.executable)} -c 'import sys; print(sys.stdin.read().upper())'")
    assert shout("roll back to fraud_2.") == "ROLL BACK TO FRAUD_2."
    assert Rewrite()("kept") == "kept", "off by default"
    for broken in (f"{shlex.quote(sys.executable)} -c 'raise SystemExit(1)'", "/no/such/command",
                   f"{shlex.quote(sys.executable)} -c 'print()'"):
        assert Rewrite(rewrite_command=broken)("kept") == "kept", broken
    slow = Rewrite(rewrite_command=f"{shlex.quote(sys.executable)} -c 'import time; time.sleep(5)'", timeout_seconds=0.5)
    assert slow("kept") == "kept"


def test_the_gate_text_reads_through_the_rewrite_and_its_json_keeps_the_template(tmp_path) -> None:
    graph = ingest(tmp_path / "shop.db", str(FIXTURES / "estate_stock.json"))
    overlay = tmp_path / "recall.yaml"
    command = f"{shlex.quote(sys.executable)} -c 'import sys; print(sys.stdin.read().upper())'"
    overlay.write_text(yaml.safe_dump({**OVERLAY, "narration": {"rewrite_command": command}}))
    args = ["gate", "churn_model", "--graph", str(graph), "--config", str(overlay)]
    env = {"RECALL_HOME": str(tmp_path / "home")}
    text = CliRunner().invoke(cli, args, env=env, terminal_width=400).output
    assert "RETRAINING CHURN_MODEL MAY GO AHEAD" in text
    answer = json.loads(CliRunner().invoke(cli, [*args, "--json"], env=env).output)
    assert answer["narrative"].startswith("Retraining churn_model may go ahead")
