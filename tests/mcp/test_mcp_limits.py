"""``recall mcp`` bounds what a client sends and how long a tool runs, answers a bad line as JSON-RPC says, and
serves the next request after each: one 5 MB argument once held the server for more than nine minutes."""

from __future__ import annotations

import asyncio
import json
import os
import queue
import socket
import subprocess
import sys
import threading
from datetime import timedelta
from pathlib import Path
from typing import Any, Iterator

import httpx
import pytest
from click.testing import CliRunner
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import McpError

from recall_dagster.cli import cli
from recall_dagster.mcp_server import MAX_RUNNING, TOOL_SECONDS_ENV, build_server
from recall_dagster.mcp_stdio import MAX_MESSAGE_BYTES

RECALL = str(Path(sys.executable).with_name("recall"))
ANSWER_SECONDS = 30  # generous: each answer here comes in well under a second once the server is up
INITIALIZE: dict[str, Any] = {"jsonrpc": "2.0", "id": "init", "method": "initialize",
                              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                         "clientInfo": {"name": "t", "version": "1"}}}
HUGE = "x" * 5_000_000


def _call(request_id: int, tool: str, **arguments: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}}


class Stdio:
    """``recall mcp`` in a process of its own, spoken to line by line, as a client that may send anything."""

    def __init__(self, env: dict[str, str]) -> None:
        self.process = subprocess.Popen([RECALL, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, env=env)
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)

    def send(self, line: bytes | dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write((line if isinstance(line, bytes) else json.dumps(line).encode()) + b"\n")
        self.process.stdin.flush()

    def answer(self, request_id: int | str) -> dict[str, Any]:
        """The answer to ``request_id``; every line before it is kept in ``seen``."""
        while True:
            try:
                message = json.loads(self.lines.get(timeout=ANSWER_SECONDS))
            except queue.Empty:
                raise AssertionError(f"no answer to {request_id!r} within {ANSWER_SECONDS} s; saw {self.seen}") from None
            self.seen.append(message)
            if message.get("id") == request_id:
                return message

    def initialized(self) -> None:
        self.send(INITIALIZE)
        assert "result" in self.answer("init")
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def lists_its_tools(self, request_id: int) -> None:
        """The server still reads and answers: the proof after each refusal."""
        self.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/list"})
        assert "scan_model" in {t["name"] for t in self.answer(request_id)["result"]["tools"]}


def _env(**extra: str) -> dict[str, str]:
    """The test's environment and ``extra``, without a config layer or time limit the developer's shell sets."""
    return {**{k: v for k, v in os.environ.items() if k not in ("RECALL_CONFIG", TOOL_SECONDS_ENV)}, **extra}


@pytest.fixture
def stdio() -> Iterator[Stdio]:
    server = Stdio(_env())
    yield server
    server.process.kill()
    server.process.wait()


def _errors(seen: list[dict[str, Any]]) -> list[tuple[Any, int]]:
    return [(m["id"], m["error"]["code"]) for m in seen if "error" in m]


def test_a_line_that_is_no_json_is_answered_parse_error_and_the_next_is_served(stdio: Stdio) -> None:
    stdio.send(b"{this is not json")
    stdio.send(b"\xff\xfe not UTF-8 either")
    stdio.initialized()  # a bad line is answered as it is read, so both answers come before this one
    assert _errors(stdio.seen) == [(None, -32700), (None, -32700)], stdio.seen
    assert stdio.seen[0]["error"]["message"].startswith("Parse error")
    stdio.lists_its_tools(2)


def test_json_that_is_no_json_rpc_message_is_answered_invalid_request(stdio: Stdio) -> None:
    stdio.send(b'{"foo": 1}')
    stdio.send(b"[1, 2]")  # a batch: MCP has none
    stdio.send(b'{"jsonrpc": "2.0", "id": 7, "method": 42}')  # its id is readable, so the answer carries it
    stdio.initialized()
    assert _errors(stdio.seen) == [(None, -32600), (None, -32600), (7, -32600)], stdio.seen
    stdio.lists_its_tools(2)


def test_a_5_mb_argument_is_refused_under_its_id_and_the_next_request_is_served(stdio: Stdio) -> None:
    stdio.initialized()
    stdio.send(_call(3, "scan_model", model=HUGE))
    refused = stdio.answer(3)
    assert refused["error"]["code"] == -32600 and str(MAX_MESSAGE_BYTES) in refused["error"]["message"], refused
    stdio.lists_its_tools(4)
    as_the_sdks_write_it = {"method": "tools/call", "params": {"name": "scan_model", "arguments": {"model": HUGE}},
                            "jsonrpc": "2.0", "id": "last"}
    stdio.send(as_the_sdks_write_it)
    assert stdio.answer("last")["error"]["code"] == -32600
    stdio.send(b"[" * 3_000_000)  # no id, and nesting no parser should be handed
    stdio.lists_its_tools(5)
    assert _errors(stdio.seen)[-1] == (None, -32600), stdio.seen


def test_the_sdks_own_client_gets_an_error_for_an_over_long_call_instead_of_waiting_forever() -> None:
    """The refusal carries the request's id, so the call the client waits on ends, where an answer under the null
    id would leave it waiting: the SDK sets no read timeout by default."""
    params = StdioServerParameters(command=RECALL, args=["mcp"], env=_env())

    async def run() -> McpError:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            with pytest.raises(McpError) as refused:
                await session.call_tool("scan_model", {"model": HUGE},
                                        read_timeout_seconds=timedelta(seconds=ANSWER_SECONDS))
            assert "scan_model" in {t.name for t in (await session.list_tools()).tools}
            return refused.value

    assert asyncio.run(run()).error.code == -32600


@pytest.fixture
def silent_datahub() -> Iterator[str]:
    """A GMS URL whose server takes the connection and never answers: every read waits out the client's timeout."""
    with socket.create_server(("127.0.0.1", 0)) as listening:
        yield f"http://127.0.0.1:{listening.getsockname()[1]}"


def test_a_tool_past_its_time_limit_answers_an_error_and_the_server_serves_on(silent_datahub: str) -> None:
    server = Stdio(_env(RECALL_GRAPH=silent_datahub, **{TOOL_SECONDS_ENV: "1"}))
    try:
        server.initialized()
        server.send(_call(3, "scan_model", model="fraud_detector"))
        result = server.answer(3)["result"]
        assert result["isError"] and "ran past its 1 s limit" in result["content"][0]["text"], result
        server.lists_its_tools(4)  # while the abandoned scan still waits on the silent DataHub
        server.send(_call(5, "blast_radius"))
        assert "ran past its 1 s limit" in server.answer(5)["result"]["content"][0]["text"]
        for request in range(6, 6 + MAX_RUNNING - 2):  # until MAX_RUNNING abandoned calls hold their threads
            server.send(_call(request, "blast_radius"))
            assert "ran past its 1 s limit" in server.answer(request)["result"]["content"][0]["text"]
        server.send(_call(99, "blast_radius"))
        refused = server.answer(99)["result"]
        assert refused["isError"] and f"{MAX_RUNNING} tool calls are still running" in refused["content"][0]["text"]
        server.lists_its_tools(100)
    finally:
        server.process.kill()
        server.process.wait()


@pytest.mark.parametrize("seconds", ["soon", "0", "-5", "nan", "inf"])
def test_a_time_limit_that_is_no_positive_number_stops_the_server_before_it_serves(
        seconds: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TOOL_SECONDS_ENV, seconds)
    result = CliRunner().invoke(cli, ["mcp"])
    assert result.exit_code == 2 and TOOL_SECONDS_ENV in result.output, result.output


def test_an_http_body_past_the_limit_is_refused_and_the_next_request_is_served() -> None:
    """2 MB: past Recall's 1 MiB, under the SDK's own 4 MiB."""
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    padded = {**INITIALIZE, "params": {**INITIALIZE["params"], "padding": "x" * 2_000_000}}
    server = build_server()
    app = server.streamable_http_app()

    async def run() -> tuple[int, int]:
        async with server.session_manager.run(), httpx.AsyncClient(
                transport=httpx.ASGITransport(app), base_url="http://127.0.0.1:8000") as client:
            refused = await client.post("/mcp", content=json.dumps(padded), headers=headers)
            served = await client.post("/mcp", content=json.dumps(INITIALIZE), headers=headers)
            return refused.status_code, served.status_code

    assert asyncio.run(run()) == (413, 200)
