"""Hostile metadata: the foreign estate with its names and descriptions rewritten by whoever wrote the graph.

Names and descriptions in DataHub are typed by many people and tools. Here
hypothesis draws them from the shapes that do harm downstream: terminal markup
(Rich's ``[/]``), Slack's control sequences (``<!channel>``, ``<@U123>``,
``<http://x|click>``), GitHub mentions, Markdown links and HTML, control
characters and ANSI escapes, very long and non-ASCII names, path segments, URLs
with credentials and the very secrets Recall is handed. They replace a table,
a column (and the feature and test on it), a registered model, a person and
every description of the foreign estate (``tests/foreign``), which fails a test
on that column and so reaches every command: scan and its write-back with
Slack and GitHub on real local catchers, gate, blind window, incidents sync,
evidence and the MCP tools. :func:`run_everything` collects what each said.
"""

from __future__ import annotations

import asyncio
import json
import os
from contextlib import chdir
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable
from unittest.mock import patch

import yaml
from click.testing import CliRunner, Result
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata.schema_classes import DocumentInfoClass
from datahub.utilities.urn_encoder import UrnEncoder
from hypothesis import strategies as st
from mcp.server.fastmcp.exceptions import ToolError

from recall_dagster.cli import cli
from recall_dagster.errors import RecallError
from recall_dagster.graph import LiteGraph
from recall_dagster.mcp_server import build_server
from tests.conftest import Inbox
from tests.fuzz.exercise import crash, write_lite

FOREIGN = Path(__file__).resolve().parent.parent / "foreign" / "fixtures"
OVERLAY = {"freshness": {"default_window_hours": 10_000_000}, "impact": {"measured": {"enabled": False}}}

# What Recall is handed and must never repeat (redact reads these variables), and credentials written into
# the graph's own text: the password of a URL, wherever it stands.
GMS_TOKEN = "gms-token-5f2a9c"
GITHUB_TOKEN = "ghp-token-77d1e0"
SLACK_PATH = "/slack/T0001/B0001/hook-secret-3e8b"
PASSWORDS = ("hunter2-in-a-url", "pw-in-a-dsn-42")

# Each does harm somewhere: the terminal, Slack, GitHub, Markdown, a file path, a log line.
FRAGMENTS = (
    "[/]", "[bold red]", "[link=http://evil.example]x[/link]", "[/bold]",
    "<!channel>", "<!here>", "<!everyone>", "<@U024BE7LH>", "<#C024BE7LR>", "<http://evil.example|click>", "&amp;",
    "@octocat", "@acme/admins", "[click](http://evil.example)", "![x](http://evil.example/p.png)",
    "<img src=x onerror=alert(1)>", "<script>alert(1)</script>", "<details>", "-->",
    "*bold*", "_it_", "`code`", "```", "\n# heading\n", "| a | b |", "\\", "%s", "{0}", "${HOME}",
    "\x1b[31m", "\x1b]8;;http://evil.example\x07", "\r", "\n", "\t", "\x00", "\x7f", "\u202e", "\u200b", "\ufeff",
    "Ünïcødé", "表", "🙂", "x" * 300,
    "../", "../../../../tmp/escaped", "..\\..\\escaped", "/etc/passwd", "~", ".", "..", "a/b",
    f"https://deploy:{PASSWORDS[0]}@db.example/x", f"postgresql://svc:{PASSWORDS[1]}@warehouse:5432/db",
    GMS_TOKEN, GITHUB_TOKEN,
)
_plain = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=8)
hostile_text = st.lists(st.sampled_from(FRAGMENTS) | _plain, min_size=1, max_size=5).map("".join)


@st.composite
def hostile_name(draw: Callable[..., Any]) -> str:
    """A name as a source might write it inside a URN: hostile, yet never empty and unlike any other name here
    (a fixed prefix keeps a drawn name from matching another thing's by accident)."""
    return "h" + draw(hostile_text)


# What each drawn string replaces in the foreign estate, wherever it stands (URNs, names, SQL, ids).
REPLACED = {"table": "customer_orders", "column": "total_amount", "model": "ltv_model"}
DESCRIBED = {"dataset": "Orders per customer, the features' source", "feature": "Money spent",
             "model": "Customer lifetime value", "person": "Alice Ng", "failure": "Got 12 results, configured to fail if != 0"}


@dataclass(frozen=True)
class Estate:
    names: dict[str, str]  # what replaced each of REPLACED
    texts: dict[str, str]  # what replaced each of DESCRIBED, and the test's description
    mcps: tuple[MetadataChangeProposalWrapper, ...]

    def describe(self) -> str:
        return json.dumps({"names": self.names, "texts": self.texts}, ensure_ascii=True, indent=1)

    def __repr__(self) -> str:  # hypothesis prints the falsifying example: the drawn strings, not 40 MCPs
        return f"Estate({self.describe()})"


def _rewrite(value: Any, swap: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return swap(value)
    if isinstance(value, list):
        return [_rewrite(v, swap) for v in value]
    if isinstance(value, dict):
        return {swap(k): _rewrite(v, swap) for k, v in value.items()}
    return value


@st.composite
def hostile_estates(draw: Callable[..., Any]) -> Estate:
    """The foreign estate with its failing test, every name in REPLACED and text in DESCRIBED drawn."""
    names = {key: draw(hostile_name()) for key in REPLACED}
    texts = {key: draw(hostile_text) for key in [*DESCRIBED, "test"]}

    def swap(value: str) -> str:
        for key, old in DESCRIBED.items():
            value = value.replace(old, texts[key])
        in_urn = value.startswith("urn:li:")  # sources write a URN's reserved characters (",", "(", ")") encoded
        for key, old in REPLACED.items():
            value = value.replace(old, UrnEncoder.encode_string(names[key]) if in_urn else names[key])
        return value

    items = [*json.loads((FOREIGN / "estate_stock.json").read_text()),
             *json.loads((FOREIGN / "failing_run.json").read_text())]
    for item in items:
        if item["aspectName"] == "assertionInfo":
            item["aspect"]["json"]["description"] = texts["test"]
    mcps = tuple(MetadataChangeProposalWrapper.from_obj(_rewrite(item, swap)) for item in items)
    return Estate(names, texts, mcps)


@dataclass
class Said:
    """Everything the commands said and wrote, by where it went."""

    crashes: list[str] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)  # commands and tools that stopped with a message (exit 2, 3)
    terminal: dict[str, str] = field(default_factory=dict)  # command: its stdout and stderr
    mcp: dict[str, str] = field(default_factory=dict)  # tool: its answer, as the client receives it
    slack: list[str] = field(default_factory=list)  # each message's text
    github: list[dict[str, Any]] = field(default_factory=list)  # each issue, comment and state change
    files: dict[Path, str] = field(default_factory=dict)  # every file written under RECALL_HOME, its text
    strays: list[Path] = field(default_factory=list)  # files written anywhere else under the scratch folder
    documents: list[str] = field(default_factory=list)  # Markdown of the documents written into the graph


def _env(workdir: Path, inbox: Inbox) -> dict[str, str]:
    return {"RECALL_HOME": str(workdir / "home"), "RECALL_GRAPH": str(workdir / "graph.db"),
            "RECALL_CONFIG": str(workdir / "recall.yaml"), "MLFLOW_TRACKING_URI": f"sqlite:///{workdir / 'mlflow.db'}",
            "DATAHUB_GMS_TOKEN": GMS_TOKEN, "GITHUB_TOKEN": GITHUB_TOKEN,
            "RECALL_SLACK_WEBHOOK_URL": f"{inbox.url}{SLACK_PATH}", "COLUMNS": "200"}


def _terminal(said: Said, command: list[str], result: Result) -> None:
    crashed = crash(command, result)
    if crashed:
        said.crashes.append(crashed)
    elif result.exit_code in (2, 3):
        said.refusals.append(f"recall {command!r}: {result.output}")
    said.terminal[" ".join(command)] = result.output  # stdout and stderr, as the terminal shows them


def _mcp(said: Said, workdir: Path, estate: Estate) -> None:
    server = build_server(str(workdir / "recall.yaml"))
    model = estate.names["model"]
    calls = {"scan_model": {"model": model}, "blast_radius": {}, "blind_window": {}, "retrain_gate": {"model": model},
             "explain_finding": {"model": model, "detector": "failing_assertion"}, "list_incidents": {}}
    for tool, arguments in calls.items():
        try:
            answer = asyncio.run(server.call_tool(tool, arguments))
        except ToolError as error:  # a refusal the client sees as isError, with Recall's message
            if not isinstance(error.__cause__, RecallError):
                said.crashes.append(f"MCP {tool}: {error.__cause__!r}")
            said.refusals.append(f"MCP {tool}: {error}")
            said.mcp[tool] = str(error)
            continue
        content = answer[0] if isinstance(answer, tuple) else answer
        said.mcp[tool] = "\n".join(c.text for c in content)  # type: ignore[union-attr]


def run_everything(estate: Estate, workdir: Path, inbox: Inbox) -> Said:
    """Write ``estate`` to a Lite file under ``workdir`` and run every command and MCP tool on it there."""
    (workdir / "cwd").mkdir(parents=True)
    notify = {"slack": {"enabled": True}, "github": {"enabled": True, "repo": "acme/models", "api_url": inbox.url}}
    (workdir / "recall.yaml").write_text(yaml.safe_dump({**OVERLAY, "writeback": {"notify": notify}}))
    write_lite(estate.mcps, workdir / "graph.db")
    before = set(workdir.rglob("*"))
    env = _env(workdir, inbox)
    inbox.token = GITHUB_TOKEN
    said = Said()
    model = estate.names["model"]
    commands = [["scan"], ["scan", "--json"], ["scan", "--write"], ["gate", model], ["gate", model, "--json"],
                ["blind-window"], ["blind-window", "--json"], ["incidents", "sync"], ["incidents", "list"],
                ["evidence", "--model", model], ["evidence", "--model", model, "--json", "--no-write"],
                ["protect"]]
    with chdir(workdir / "cwd"), patch.dict(os.environ, env):  # the MCP tools read it, as a served tool does
        for command in commands:
            _terminal(said, command, CliRunner().invoke(cli, command))
        _mcp(said, workdir, estate)
    for method, path, body in inbox.take():
        if path.startswith("/slack"):
            said.slack.append(body["text"])
        else:
            said.github.append({"method": method, "path": path, **(body or {})})
    home = workdir / "home"
    for path in workdir.rglob("*"):
        if path.is_file() and path not in before:
            if path.resolve().is_relative_to(home.resolve()):
                said.files[path] = path.read_text(errors="replace")
            elif not path.name.startswith("graph.db"):
                said.strays.append(path)
    graph = LiteGraph(workdir / "graph.db")
    try:
        documents = graph.get_aspects(graph.list_urns("document"), [DocumentInfoClass])
    finally:
        graph.close()
    said.documents = [a[DocumentInfoClass.ASPECT_NAME].contents.text for a in documents.values() if a]
    return said
