"""``recall scan`` end to end: report, JSON contract, exit codes, state under RECALL_HOME."""

from __future__ import annotations

import json
import socket

import pytest
from click.testing import CliRunner
from scan_estates import ingest

from recall_dagster.cli import cli
from recall_dagster.kept.baselines import JsonStateStore
from recall_dagster.errors import ConfigError

AS_OF = "2025-06-01T00:00:00Z"


@pytest.fixture
def run(tmp_path, monkeypatch):
    monkeypatch.setenv("RECALL_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("RECALL_GRAPH", raising=False)
    monkeypatch.delenv("RECALL_CONFIG", raising=False)

    def invoke(*args: str):
        return CliRunner().invoke(cli, ["scan", *args], catch_exceptions=False)

    return invoke


def test_failing_estate_exits_1_with_the_json_contract(run, estate, tmp_path):
    result = run("--graph", str(estate("general")), "--json", "--as-of", AS_OF)
    assert result.exit_code == 1, result.output
    body = json.loads(result.output)
    assert body["scanned_at"] == "2025-06-01T00:00:00+00:00"
    assert [m["tier"] for m in body["models"]] == ["CRITICAL", "CRITICAL"]
    assert body["blast_radius"][0]["deployments"] == 2
    # the first scan recorded schema baselines under RECALL_HOME
    assert JsonStateStore(tmp_path / "home" / "state").load_baselines()


def test_healthy_estate_exits_0_and_prints_the_report(run, estate, monkeypatch):
    monkeypatch.setenv("RECALL_GRAPH", str(estate("healthy")))
    result = run("--as-of", AS_OF)
    assert result.exit_code == 0, result.output
    assert "engagement_3" in result.output and "HEALTHY" in result.output


def test_as_of_changes_freshness(run, estate):
    later = run("--graph", str(estate("healthy")), "--json", "--as-of", "2025-09-01")
    assert later.exit_code == 0  # stale is a WARN: below the fail tier
    detectors = {f["detector"] for f in json.loads(later.output)["models"][0]["findings"]}
    assert "upstream_staleness" in detectors


def test_fail_tier_comes_from_config(run, estate, tmp_path):
    strict = tmp_path / "strict.yaml"
    strict.write_text("scoring:\n  fail_tier: WATCH\n")
    result = run("--graph", str(estate("sparse")), "--config", str(strict), "--as-of", AS_OF)
    assert result.exit_code == 1  # hinter's INFO finding puts it in WATCH, above HEALTHY


def test_usage_errors_exit_2(run, estate, tmp_path):
    graph = str(estate("healthy"))
    assert run("--graph", graph, "--as-of", "yesterday").exit_code == 2
    broken = tmp_path / "broken.yaml"
    broken.write_text("detectors: {nope: {severity: {}}}\n")
    assert run("--graph", graph, "--config", str(broken)).exit_code == 2
    not_a_graph = tmp_path / "notes.txt"
    not_a_graph.write_text("hello")
    assert run("--graph", str(not_a_graph)).exit_code == 2
    assert run("--graph", graph, "--model", "urn:li:mlModel:(urn:li:dataPlatform:x,nope,PROD)").exit_code == 2


def test_unreachable_graph_exits_3(run, tmp_path):
    assert run("--graph", str(tmp_path / "nowhere.db")).exit_code == 3
    with socket.socket() as probe:  # a port nothing listens on once the probe is closed
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"
    result = run("--graph", url)
    assert result.exit_code == 3 and url in result.output and "Traceback" not in result.output


def test_empty_graph_is_a_clean_scan(run, tmp_path):
    db = ingest(tmp_path / "empty.db", "estate_empty.json")
    result = run("--graph", str(db), "--all")
    assert result.exit_code == 0, result.output
    assert "No production models" in result.output or "0 model(s)" in result.output


def test_corrupt_state_is_reported_not_crashed(tmp_path):
    store = JsonStateStore(tmp_path)
    store.path.write_text("{not json")
    with pytest.raises(ConfigError, match="delete the file"):
        store.load_baselines()
    store.path.write_text('{"urn:li:dataset:x": ["a"]}')
    with pytest.raises(ConfigError, match="do not map datasets to column types"):
        store.load_baselines()
    with pytest.raises(ConfigError, match="do not map datasets to column types"):
        store.save_baselines({"urn:li:dataset:y": {"a": "int"}})  # recording over it would lose what it held
    store.path.unlink()
    store.save_baselines({"urn:li:dataset:x": {"a": "int"}})
    store.save_baselines({"urn:li:dataset:y": {"b": "text"}})
    assert store.load_baselines() == {"urn:li:dataset:x": {"a": "int"}, "urn:li:dataset:y": {"b": "text"}}
