"""``recall mcp`` over the real protocol: the SDK's client lists the tools and gets the CLI's JSON from them."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest
from click.testing import CliRunner
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from recall_dagster.cli import cli
from recall_dagster.progress import Progress
from recall_dagster.settings import Settings
from seed import lifecycle
from tests.conftest import point_recall_at

pytestmark = [pytest.mark.stack, pytest.mark.slow]

TOOLS = {"scan_model", "blast_radius", "blind_window", "retrain_gate", "impact_test", "explain_finding",
         "list_incidents"}


@pytest.fixture(scope="module")
def estate(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    settings = Settings.under(tmp_path_factory.mktemp("mcp"))
    lifecycle.build(settings, Progress(quiet=True), scale=0.05)
    lifecycle.break_estate(settings, Progress(quiet=True))
    yield settings
    lifecycle.reset(settings, Progress(quiet=True))


def _session(settings: Settings, calls: list[tuple[str, dict[str, Any]]]) -> tuple[set[str], list[Any]]:
    env = {**os.environ, "RECALL_HOME": str(settings.home), "RECALL_GRAPH": settings.graph}
    env.pop("RECALL_CONFIG", None)
    params = StdioServerParameters(command=str(Path(sys.executable).with_name("recall")), args=["mcp"], env=env)

    async def run() -> tuple[set[str], list[Any]]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = {t.name for t in (await session.list_tools()).tools}
            answers = []
            for name, arguments in calls:
                result = await session.call_tool(name, arguments)
                assert not result.isError, result.content
                answers.append(json.loads(result.content[0].text) if len(result.content) == 1 else
                               [json.loads(c.text) for c in result.content])
            return tools, answers

    return asyncio.run(run())


def _cli(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(cli, [*args, "--json"])
    assert result.exit_code in (0, 1, 4), result.output
    return json.loads(result.stdout)


def _stable(data: Any) -> Any:
    """The JSON without the instants a second call necessarily changes."""
    if isinstance(data, dict):
        return {k: _stable(v) for k, v in data.items() if k not in ("scanned_at", "judged_at", "judged_at_ms")}
    if isinstance(data, list):
        return [_stable(v) for v in data]
    return data


def test_a_client_lists_the_tools_and_gets_the_clis_json(estate: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    point_recall_at(estate, monkeypatch)
    cli_scan = _cli("scan", "--model", "fraud_detector")  # records the schema baselines the tool then reads
    cli_gate = _cli("gate", "fraud_detector")
    tools, (scanned, gated) = _session(estate, [("scan_model", {"model": "fraud_detector"}),
                                                ("retrain_gate", {"model": "fraud_detector"})])
    assert TOOLS <= tools
    assert _stable(scanned) == _stable(cli_scan)
    assert _stable(gated) == _stable(cli_gate) and gated["verdict"] == "NO-GO"
