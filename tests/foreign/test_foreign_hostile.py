"""Names in the graph are written by many people and tools: one that looks like terminal markup is shown as it is,
never read as markup (a crash that reads as NO-GO, or text that silently vanishes)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from foreign_estate import FIXTURES, OVERLAY

from recall_dagster.cli import cli
from recall_dagster.mcp_server import build_server
from recall_dagster.settings import Settings
from tests.scan.scan_estates import ingest

HOSTILE = "days_since_signup[/]"
HOSTILE_TABLE = "customer_orders[/]"


def renamed(tmp_path: Path, name: str, hostile: str, failing: bool = False) -> Settings:
    """The foreign estate with ``name`` written as ``hostile`` wherever it appears; with ``failing``, after the
    next dbt run that fails its test (so the name reaches incidents, blind windows and gates)."""
    fixtures = []
    for source in ("estate_stock.json", *(["failing_run.json"] if failing else [])):
        fixture = tmp_path / f"hostile_{source}"
        fixture.write_text((FIXTURES / source).read_text().replace(name, hostile))
        fixtures.append(str(fixture))
    db = ingest(tmp_path / "shop.db", *fixtures)
    (tmp_path / "recall.yaml").write_text(json.dumps(OVERLAY))
    return Settings(home=tmp_path / "home", graph=str(db))


def run(shop: Settings, command: list[str]) -> str:
    """The command's terminal output; it must neither crash nor read as a failure of the tool."""
    config = str(Path(shop.graph).with_name("recall.yaml"))
    done = CliRunner().invoke(cli, [*command, "--graph", shop.graph, "--config", config],
                              env={"RECALL_HOME": str(shop.home), "COLUMNS": "300"})
    assert done.exception is None or isinstance(done.exception, SystemExit), done.exception
    assert done.exit_code in (0, 1, 4), done.output
    return done.output.replace("\n", "")


@pytest.mark.parametrize("command", [["scan"], ["gate", "ltv_model"], ["blind-window"], ["incidents", "sync"]])
def test_markup_in_a_name_is_shown_not_obeyed(tmp_path: Path, command: list[str]) -> None:
    said = run(renamed(tmp_path, "days_since_signup", HOSTILE), command)
    if command[0] in ("scan", "gate"):
        assert HOSTILE in said, "the name as the graph holds it"


@pytest.mark.parametrize("command", [
    ["protect"], ["impact", f"shop.marts.{HOSTILE_TABLE}", "--column", "total_amount", "--mutation", "drop",
                  "--no-write"],
])
def test_a_table_named_like_markup_is_shown_by_protect_and_impact(tmp_path: Path, command: list[str]) -> None:
    assert HOSTILE_TABLE in run(renamed(tmp_path, "customer_orders", HOSTILE_TABLE), command), (
        "the name as the graph holds it")


def test_a_registered_name_holding_a_slash_is_found_whole(tmp_path: Path) -> None:
    """``team/ltv[/]`` is the model's whole name, not version ``]`` of a model ``team/ltv[``."""
    said = run(renamed(tmp_path, "ltv_model", "team/ltv[/]"), ["gate", "team/ltv[/]"])
    assert "Retrain team/ltv[/]" in said


PASSWORD_TABLE = "orders_at_postgresql://svc:hunter2-pw@db"


@pytest.mark.parametrize("command", [["scan"], ["scan", "--json"], ["blind-window"],
                                     ["gate", "ltv_model", "--json"]])
def test_a_password_written_into_a_name_is_masked_in_what_every_command_prints(
        tmp_path: Path, command: list[str]) -> None:
    said = run(renamed(tmp_path, "customer_orders", PASSWORD_TABLE, failing=True), command)
    assert "hunter2-pw" not in said and "[redacted]@db" in said


def test_a_password_written_into_a_name_is_masked_in_mcp_answers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shop = renamed(tmp_path, "customer_orders", PASSWORD_TABLE, failing=True)
    monkeypatch.setenv("RECALL_HOME", str(shop.home))
    monkeypatch.setenv("RECALL_GRAPH", shop.graph)
    server = build_server(str(tmp_path / "recall.yaml"))
    content = asyncio.run(server.call_tool("blind_window", {}))
    answer = "".join(c.text for c in (content[0] if isinstance(content, tuple) else content))
    assert "hunter2-pw" not in answer and "[redacted]@db" in answer


# An OSC 8 hyperlink ("click" pointing elsewhere), a screen clear and a right-to-left override; shown written out.
CONTROLS = "\x1b]8;;http://evil\x1b\\click\x1b]8;;\x1b\\\x1b[2J\u202e"
CONTROLS_SHOWN = "\\x1b]8;;http://evil\\x1b\\click\\x1b]8;;\\x1b\\\\x1b[2J\\u202e"


@pytest.mark.parametrize(("name", "command"), [
    ("customer_orders", ["scan"]), ("customer_orders", ["gate", "ltv_model"]), ("customer_orders", ["blind-window"]),
    ("customer_orders", ["protect"]), ("not_null", ["incidents", "sync"]),
])
def test_escape_sequences_in_a_name_reach_the_terminal_written_out_never_obeyed(
        tmp_path: Path, name: str, command: list[str]) -> None:
    """A table, or a failing test, whose name carries terminal escape sequences and a bidi override: every
    table and line that names it shows what is there as escapes, and sends the terminal none of it."""
    said = run(renamed(tmp_path, name, name + json.dumps(CONTROLS)[1:-1], failing=True), command)
    assert "\x1b" not in said and "\u202e" not in said
    assert name + CONTROLS_SHOWN in said


def test_markup_in_a_table_name_is_text_in_the_evidence_markdown(tmp_path: Path) -> None:
    shop = renamed(tmp_path, "customer_orders", "orders<img src=x onerror=alert>[x]")
    run(shop, ["evidence", "--model", "ltv_model", "--no-write"])
    pack = (shop.home / "evidence" / "governance" / "ltv_model.md").read_text()
    assert "orders&lt;img src=x onerror=alert&gt;\\[x\\]" in pack and "<img" not in pack


def test_a_model_named_with_parentheses_is_found_by_the_name_its_team_gave_it(tmp_path: Path) -> None:
    """DataHub's sources write ``(`` and ``)`` of a name percent-encoded inside its URN: ``ltv(v2)`` is still the
    model's name, in what Recall shows and in what it answers to."""
    fixture = (FIXTURES / "estate_stock.json").read_text()
    encoded = fixture.replace("sagemaker,ltv_model", "sagemaker,ltv%28v2%29").replace("ltv_model", "ltv(v2)")
    (tmp_path / "encoded.json").write_text(encoded)
    (tmp_path / "recall.yaml").write_text(json.dumps(OVERLAY))
    shop = Settings(home=tmp_path / "home", graph=str(ingest(tmp_path / "shop.db", str(tmp_path / "encoded.json"))))
    said = run(shop, ["gate", "ltv(v2)"])
    assert "Retrain ltv(v2) (judged on ltv(v2)_1)" in said


def test_a_registered_name_ending_in_a_new_line_is_found_by_its_name(tmp_path: Path) -> None:
    said = run(renamed(tmp_path, "ltv_model", "ltv[/]\\n# heading\\n"), ["gate", "ltv[/]\n# heading\n"])
    assert "Retrain ltv[/] # heading  (judged on" in said, "its line breaks shown as spaces"
