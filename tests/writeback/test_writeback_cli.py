"""``recall scan --write`` and ``--dry-run`` end to end, on Lite and against the fake GMS."""

from __future__ import annotations

import errno
import json
import os
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from recall_dagster.cli import cli

AS_OF = "2025-06-01T00:00:00Z"


@pytest.fixture
def run(settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("RECALL_HOME", str(settings.home))
    monkeypatch.delenv("RECALL_GRAPH", raising=False)
    fast = tmp_path / "fast.yaml"
    # one try per write: the SDK's own retries already wait on a server that does not answer
    fast.write_text("writeback:\n  retry: {attempts: 1, backoff_seconds: 0, max_backoff_seconds: 0}\n")
    monkeypatch.setenv("RECALL_CONFIG", str(fast))

    def invoke(*args: str):
        return CliRunner().invoke(cli, ["scan", "--as-of", AS_OF, *args], catch_exceptions=False)

    return invoke


def _runs(settings) -> list[Path]:
    return sorted(settings.evidence_dir.glob("recall-*")) if settings.evidence_dir.exists() else []


def test_write_reports_the_writes_and_keeps_the_findings_exit_code(run, lite_path, settings) -> None:
    result = run("--graph", str(lite_path), "--write")

    assert result.exit_code == 1, result.output  # the model is CRITICAL: writing back changes nothing there
    assert "landed, 0 already true, 0 refused, 0 pending" in result.output
    (evidence,) = _runs(settings)
    assert {p.name for p in evidence.iterdir()} == {"findings.json", "plan.json", "report.md", "outcome.json"}


def test_dry_run_prints_the_writes_and_writes_nothing(run, lite_path, settings) -> None:
    before = lite_path.read_bytes()
    result = run("--graph", str(lite_path), "--dry-run")

    assert result.exit_code == 1, result.output
    assert "Dry run recall-" in result.output and "incidentInfo" in result.output and "documentInfo" in result.output
    assert lite_path.read_bytes() == before and _runs(settings) == []


def test_json_carries_the_writeback_report(run, lite_path) -> None:
    body = json.loads(run("--graph", str(lite_path), "--write", "--json").output)
    assert body["models"][0]["tier"] == "CRITICAL"
    assert body["writeback"]["ok"] is True and body["writeback"]["counts"]["incident"]["landed"] == 4  # two, tagged



def test_dry_run_json_lists_every_mcp(run, lite_path) -> None:
    body = json.loads(run("--graph", str(lite_path), "--dry-run", "--json").output)["writeback"]
    assert body["dry_run"] is True
    assert len(body["writes"]) == sum(c["planned"] for c in body["counts"].values()) > 0
    assert {w["mcp"]["changeType"] for w in body["writes"]} == {"UPSERT"}


def test_write_needs_the_whole_estate(run, lite_path) -> None:
    result = run("--graph", str(lite_path), "--write", "--model", "urn:li:mlModel:(urn:li:dataPlatform:x,y,PROD)")
    assert result.exit_code == 2 and "need the whole estate" in result.output


def test_a_gms_that_stops_answering_writes_exits_3_with_the_evidence(run, fake, settings) -> None:
    fake.drop_writes = True
    result = run("--graph", fake.url, "--write")

    assert result.exit_code == 3, result.output
    assert "write-back" in result.output and "pending" in result.output
    (evidence,) = _runs(settings)
    assert {p.name for p in evidence.iterdir()} == {"findings.json", "plan.json", "report.md", "outcome.json"}


def test_writing_one_scan_twice_from_the_cli_changes_nothing(run, lite_path) -> None:
    first = json.loads(run("--graph", str(lite_path), "--write", "--json").output)
    second = json.loads(run("--graph", str(lite_path), "--write", "--json").output)
    assert second["models"] == first["models"]
    planned = {path: c["planned"] for path, c in second["writeback"]["counts"].items()}
    assert planned.pop("property") <= 1, "only recall.lastScanned may move, and only if the clock did"
    assert planned == {"tag": 0, "assertion": 0, "incident": 0, "document": 0}, "one scan, one evaluation each"
    later = CliRunner().invoke(cli, ["scan", "--as-of", "2025-06-01T00:01:00Z", "--graph", str(lite_path), "--write",
                                     "--json"], catch_exceptions=False)
    assert json.loads(later.output)["writeback"]["counts"]["assertion"]["planned"] == 3, "a later scan evaluates anew"


def test_a_full_disk_stops_the_write_back_before_any_remote_write(run, lite_path, settings, monkeypatch) -> None:
    before = lite_path.read_bytes()
    real = tempfile.mkstemp

    def full(*args, **kwargs):  # every record is written through a temporary file of its own first
        folder = Path(kwargs["dir"])
        if folder == settings.evidence_dir or settings.evidence_dir in folder.parents:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(*args, **kwargs)

    monkeypatch.setattr(tempfile, "mkstemp", full)
    result = run("--graph", str(lite_path), "--write")
    assert result.exit_code == 2 and "No space left on device; check RECALL_HOME" in result.output
    assert lite_path.read_bytes() == before, "no evidence, no remote write"


def test_an_evidence_directory_that_cannot_be_made_stops_before_any_remote_write(run, lite_path, settings) -> None:
    before = lite_path.read_bytes()
    settings.home.mkdir(parents=True, exist_ok=True)
    settings.evidence_dir.write_text("a file where the evidence directory should be")
    result = run("--graph", str(lite_path), "--write")
    assert result.exit_code == 2 and "cannot write evidence" in result.output
    assert lite_path.read_bytes() == before
