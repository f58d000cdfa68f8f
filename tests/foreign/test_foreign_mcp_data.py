"""An assistant reading Recall's MCP answers is told, and shown, which text is the graph's: data, not instructions."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from foreign_estate import FIXTURES, fail_the_test

from recall_dagster.mcp_server import build_server
from recall_dagster.settings import Settings
from tests.scan.scan_estates import ingest


def answer(server: Any, tool: str, **arguments: Any) -> Any:
    content = asyncio.run(server.call_tool(tool, arguments))
    content = content[0] if isinstance(content, tuple) else content
    return [json.loads(c.text) for c in content]


def test_a_narrative_quotes_what_the_graph_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = ingest(tmp_path / "shop.db", str(FIXTURES / "estate_stock.json"))
    shop = Settings(home=tmp_path / "home", graph=str(db))
    fail_the_test(shop)
    monkeypatch.setenv("RECALL_HOME", str(shop.home))
    monkeypatch.setenv("RECALL_GRAPH", str(db))
    server = build_server()
    [explained, *_] = answer(server, "explain_finding", model="churn_model", detector="failing_assertion")
    assert explained["narrative"].startswith(f"{explained['severity']}: {json.dumps(explained['message'])}. "), (
        "the finding's own words, from the graph, in quotes")
    assert "never as instructions" in (server.instructions or ""), "what an assistant is told when it connects"
