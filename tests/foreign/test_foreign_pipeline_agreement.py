"""One pipeline, every entry point: ``recall scan``, the MCP server's ``scan_model`` tool and the Dagster scan
assets run the same stages (:class:`recall_dagster.scan.Pipeline`), so on one graph they give the same findings,
tiers and scores, with the findings measured on their models (``impact.measured``) and without."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from dagster import DagsterInstance
from foreign_estate import OVERLAY, fail_the_test

from recall_dagster.cli import cli
from recall_dagster.defs import RecallResource, recall_definitions
from recall_dagster.mcp_server import build_server
from recall_dagster.settings import Settings

MODEL = "churn_model"


def _judged(scan: dict[str, Any]) -> list[dict[str, Any]]:
    """What a scan says of each model: its score, its tier, and each finding with its severity and what
    measuring it said; the instant it ran at and how it came by its closures left out."""
    return [{k: m[k] for k in ("urn", "score", "tier", "findings")} for m in scan["models"]]


def _cli(shop: Settings, overlay: Path, *flags: str) -> dict[str, Any]:
    done = CliRunner().invoke(cli, ["scan", "--json", "--graph", shop.graph, "--config", str(overlay), *flags],
                              env={"RECALL_HOME": str(shop.home), "MLFLOW_TRACKING_URI": shop.mlflow_uri})
    assert done.exit_code in (0, 1), done.output
    return json.loads(done.output)


def _mcp(shop: Settings, overlay: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setenv("RECALL_HOME", str(shop.home))
    monkeypatch.setenv("RECALL_GRAPH", shop.graph)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", shop.mlflow_uri)
    server = build_server(str(overlay))
    content, _ = asyncio.run(server.call_tool("scan_model", {"model": MODEL}))
    (text,) = content
    return json.loads(text.text)


def _dagster(shop: Settings, overlay: Path, instance: DagsterInstance, **config: Any) -> dict[str, Any]:
    defs = recall_definitions(RecallResource.from_settings(shop, config_path=str(overlay)))
    run_config = {"ops": {"model_closures": {"config": config}}} if config else None
    ran = defs.resolve_job_def("recall_scan").execute_in_process(instance=instance, run_config=run_config,
                                                                 raise_on_error=False)
    assert ran.success
    return ran.output_for_node("risk_scores").contract().as_json()


@pytest.mark.parametrize("measured", [True, False], ids=["measured", "unmeasured"])
def test_the_cli_the_mcp_tool_and_the_dagster_assets_agree(
    shop: Settings, tmp_path: Path, instance: DagsterInstance, monkeypatch: pytest.MonkeyPatch, measured: bool,
) -> None:
    overlay = tmp_path / f"recall-{measured}.yaml"
    overlay.write_text(yaml.safe_dump({**OVERLAY, "impact": {"measured": {"enabled": measured}}}))
    fail_the_test(shop)  # a failing not-null test upstream of the model: a finding measuring replays

    whole = _cli(shop, overlay)
    assert _judged(_dagster(shop, overlay, instance)) == _judged(whole)
    one = _cli(shop, overlay, "--model", MODEL)
    assert _judged(_mcp(shop, overlay, monkeypatch)) == _judged(one)
    assert _judged(_dagster(shop, overlay, instance, models=[MODEL])) == _judged(one)

    findings = [f for m in whole["models"] for f in m["findings"]]
    assert any(f["detector"] == "failing_assertion" for f in findings)
    said = [f["evidence"]["measured"] for f in findings if "measured" in f["evidence"]]
    assert bool(said) == measured, "measuring on, the failing test is replayed (or said why it cannot be)"
    if measured:
        unmeasured = _cli(shop, overlay, "--no-measure")
        assert not [f for m in unmeasured["models"] for f in m["findings"] if "measured" in f["evidence"]]
