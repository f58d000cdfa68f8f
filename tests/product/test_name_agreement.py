"""One name, one thing: every name the graph uses for a thing means it in every command that takes such a name.

Hypothesis draws the small estates of :mod:`tests.product.agreement_estates` (a dbt node and its warehouse twin
as one table, dbt tests on dbt nodes, an MLflow model with one to three versions), writes each to a real DataHub
Lite file and asks the real CLI, with ``--json``, and Recall's MCP tools (the server ``recall mcp`` serves, its
tools called in-process through the SDK's tool manager) about each thing by each of its names:

- a table (:func:`table_names`: each twin's URN and ``platform:name``, the dbt ``unique_id``, the full name, each
  trailing part, the short name in capitals): ``blind-window``, ``impact``, ``ack``, and the MCP tools
  ``blind_window``, ``impact_test`` and ``explain_finding``;
- a dbt test (its URN, its name in any case, its ``unique_id``): ``blind-window``, ``ack`` and the MCP tools
  ``blind_window`` and ``explain_finding``;
- the registered model (its name, its group's URN) and each version (``NAME/VERSION``, its URN): ``scan --model``,
  ``gate``, ``evidence``, ``ack --model``, and the MCP tools ``scan_model``, ``retrain_gate`` and
  ``explain_finding``.

Every name of one thing gets the same answer from one command: the same JSON (less the instants a later call
changes and the name echoed back), or the same refusal. ``incidents`` takes no name, so it is not asked.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.exceptions import ToolError

from recall_dagster.cli import cli
from recall_dagster.errors import EXIT_USAGE, RecallError
from recall_dagster.mcp_server import build_server
from tests.product.agreement_estates import (
    FEAT_PG,
    LABELS,
    NAMESAKE,
    RAW_DBT,
    RAW_PG,
    REGISTERED_NAMES,
    STG_DBT,
    TABLES,
    DbtTest,
    Estate,
    Version,
    estates,
    table_names,
    version_names,
)
from tests.product.test_cross_command_agreement import SETTINGS, Shop, shop

# Keys that differ between two calls about the same thing: the instants of each call, the name as given, where
# each call wrote its evidence.
VOLATILE = frozenset({"judged_at", "generated_at", "scanned_at", "target", "files"})
REFUSED = "refused (exit 2)"
# Fewer drawn estates than the other agreement tests (each asks some eighty questions), a few names of each
# thing per estate: the explicit estates below ask every name.
NAME_SETTINGS = settings(SETTINGS, max_examples=10)

# The disagreements this test found, as the smallest estates showing them: each is asked by every name below.
_PRODUCTION = Version(1, ("production",), None, 480, (FEAT_PG,))
# a failing dbt test on staging's dbt node, which the production version reads: ack and explain_finding did not
# know the test by its dbt name or unique_id, which blind-window accepts
FAILING_STAGING_TEST = Estate((_PRODUCTION,), None, True, (), (DbtTest(STG_DBT, "amount", ((2, "FAILURE"),)),), {})
# the only version reads the labels alone: the dbt nodes are outside every closure, and their failing test reaches
# no model. impact and blind-window refused the dbt node's unique_id and the warehouse twin's names; blind-window
# refused every name of a table no test is on, which impact answers
READ_BY_NO_MODEL = Estate((Version(1, ("production",), None, 480, (LABELS,)),), None, True, (),
                          (DbtTest(STG_DBT, "amount", ((2, "FAILURE"),)),), {})


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("names")


def _stable(data: Any) -> Any:
    """The JSON without what two calls about one thing may rightly say differently."""
    if isinstance(data, dict):
        return {k: _stable(v) for k, v in data.items() if k not in VOLATILE}
    if isinstance(data, list):
        return [_stable(v) for v in data]
    return data


def _cli(s: Shop, *args: str) -> Any:
    """``recall ARGS --json``, as a name's answer: the stable JSON, or that the name was refused."""
    result = CliRunner().invoke(cli, [*args, "--json"], env=s.env)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"recall {' '.join(args)} crashed on\n{s.estate.describe()}") from result.exception
    if result.exit_code == EXIT_USAGE:
        return REFUSED
    assert result.exit_code in (0, 1, 4), f"recall {' '.join(args)} exited {result.exit_code}: {result.output}"
    if not result.stdout.strip():  # a refusal of another kind (no production version: exit 4), said on stderr
        return f"exit {result.exit_code}"
    return {"exit": result.exit_code, **_stable(json.loads(result.stdout))}


@contextmanager
def _mcp(s: Shop) -> Iterator[Callable[..., Any]]:
    """Recall's MCP server on the estate: each call is one tool's answer, the stable JSON or a refusal."""
    with pytest.MonkeyPatch.context() as env:
        for key, value in s.env.items():
            env.setenv(key, value)
        server: FastMCP = build_server(s.env["RECALL_CONFIG"])

        def call(tool: str, **arguments: Any) -> Any:
            try:
                answer = asyncio.run(server.call_tool(tool, arguments))
            except ToolError as error:  # what the SDK makes of Recall's refusal: the client sees isError
                if not isinstance(error.__cause__, RecallError):
                    raise
                return REFUSED if error.__cause__.exit_code == EXIT_USAGE else f"exit {error.__cause__.exit_code}"
            content = answer[0] if isinstance(answer, tuple) else answer
            return _stable([json.loads(c.text) for c in content])  # type: ignore[union-attr]

        yield call


def _agree(s: Shop, what: str, names: Sequence[str], asks: Mapping[str, Callable[[str], Any]]) -> None:
    """Each command in ``asks`` gives every one of ``names`` the same answer."""
    for command, ask in asks.items():
        answers = {name: ask(name) for name in names}
        first = answers[names[0]]
        differing = [n for n, a in answers.items() if a != first]
        assert not differing, (
            f"{command} answers {what} by {names[0]!r} and by {differing} differently\n--- estate:\n"
            f"{s.estate.describe()}\n--- {names[0]!r}:\n{json.dumps(first, indent=1)[:3000]}\n--- {differing[0]!r}:\n"
            f"{json.dumps(answers[differing[0]], indent=1)[:3000]}")


IN_A_MONTH = (datetime.now(timezone.utc) + timedelta(days=30)).date().isoformat()  # within max_days


def _ack(s: Shop, detector: str, subject: str, *model: str) -> Any:
    """``recall ack`` kept local: what it accepts (subject, findings), or that it refused."""
    made = _cli(s, "ack", detector, subject, "--reason", "known", "--until", IN_A_MONTH, *model, "--no-write")
    return made if made == REFUSED else {k: made[k] for k in ("exit", "detector", "subject", "fingerprints")}


Pick = Callable[[Sequence[str]], Sequence[str]]


def _names_agree(scratch: Path, estate: Estate, pick: Pick) -> None:
    """Tables, dbt tests, the registered model and each version: the names ``pick`` chooses of each (its first
    always among them), one answer per command."""
    models = (("the registered model", REGISTERED_NAMES),
              *((f"version {v.number}", version_names(v.number)) for v in estate.versions))
    with tempfile.TemporaryDirectory(dir=scratch) as workdir:
        s = shop(estate, Path(workdir))
        with _mcp(s) as mcp:
            for what, names in models:
                _agree(s, what, pick(names), {
                    "scan --model": lambda n: _cli(s, "scan", "--model", n),
                    "gate": lambda n: _cli(s, "gate", n),
                    "evidence": lambda n: _cli(s, "evidence", "--model", n, "--no-write"),
                    "mcp scan_model": lambda n: mcp("scan_model", model=n),
                    "mcp retrain_gate": lambda n: mcp("retrain_gate", model=n),
                    "mcp explain_finding": lambda n: mcp("explain_finding", model=n, detector="failing_assertion"),
                })
            for table in TABLES:
                _agree(s, f"table {table}", pick(table_names(table)), {
                    "blind-window": lambda n: _cli(s, "blind-window", n),
                    "impact": lambda n: _cli(s, "impact", n, "--column", "payment_id", "--mutation", "null_fraction",
                                             "--no-write"),
                    "mcp blind_window": lambda n: mcp("blind_window", target=n),
                    "mcp impact_test": lambda n: mcp("impact_test", dataset=n, column="payment_id",
                                                     mutation="null_fraction"),
                    "mcp explain_finding": lambda n: mcp("explain_finding", model="fraud", detector="failing_assertion",
                                                         subject=n),
                })
            for test in estate.tests:
                _agree(s, f"test {test.name}", pick(test.names), {
                    "blind-window": lambda n: _cli(s, "blind-window", n),
                    "mcp blind_window": lambda n: mcp("blind_window", target=n),
                    "mcp explain_finding": lambda n: mcp("explain_finding", model="fraud", detector="failing_assertion",
                                                         subject=n),
                })
        # last: an acknowledgement is honoured by the commands above
        for test in estate.tests:
            _agree(s, f"test {test.name}", pick(test.names), {"ack": lambda n: _ack(s, "failing_assertion", n)})
        for table in TABLES:
            _agree(s, f"table {table}", pick(table_names(table)), {
                "ack": lambda n: _ack(s, "failing_assertion", n),
                "ack upstream_staleness": lambda n: _ack(s, "upstream_staleness", n),
            })
        for what, names in models:
            _agree(s, what, pick(names), {
                "ack --model": lambda n: _ack(s, "failing_assertion", "payments_clean", "--model", n)})


@NAME_SETTINGS
@given(estate=estates(), data=st.data())
def test_every_name_of_a_thing_means_it_in_every_command(scratch: Path, estate: Estate, data: st.DataObject) -> None:
    """On drawn estates, each thing by its first name and a few others drawn from the rest."""

    def pick(names: Sequence[str]) -> Sequence[str]:
        return [names[0], *data.draw(st.lists(st.sampled_from(names[1:]), min_size=1, max_size=2, unique=True))]

    _names_agree(scratch, estate, pick)


@pytest.mark.parametrize("estate", [FAILING_STAGING_TEST, READ_BY_NO_MODEL], ids=["failing_staging_test",
                                                                                   "read_by_no_model"])
def test_every_name_of_a_thing_means_it_where_commands_once_split(scratch: Path, estate: Estate) -> None:
    """The estates where the commands once disagreed, by every name of everything."""
    _names_agree(scratch, estate, lambda names: names)


@pytest.mark.parametrize("reads", [(FEAT_PG, NAMESAKE), (FEAT_PG,), (LABELS,)],
                         ids=["both_read", "one_read", "neither_read"])
def test_a_name_two_tables_answer_to_is_refused_with_both(scratch: Path, reads: tuple[str, ...]) -> None:
    """"payments" is raw.payments and archive.payments: impact, blind-window and the MCP tools refuse it (exit 2)
    naming both, whether models read the two tables, one of them or neither; each table's own full name still
    answers."""
    estate = Estate((Version(1, ("production",), None, 480, reads),), None, True, (), (), {}, namesake=True)
    with tempfile.TemporaryDirectory(dir=scratch) as workdir:
        s = shop(estate, Path(workdir))
        for args in (("blind-window", "payments"),
                     ("impact", "payments", "--column", "amount", "--mutation", "drop", "--no-write")):
            result = CliRunner().invoke(cli, [*args, "--json"], env=s.env)
            said = " ".join(result.output.split())
            assert result.exit_code == EXIT_USAGE and "'payments' names several tables" in said, said
            assert all(urn in said for urn in (RAW_PG, NAMESAKE)), said
            assert _cli(s, args[0], "archive.payments", *args[2:]) != REFUSED
        with _mcp(s) as mcp:
            assert mcp("impact_test", dataset="payments", column="amount", mutation="drop") == REFUSED
            assert mcp("blind_window", target="payments") == REFUSED


def test_blind_window_on_a_table_no_test_is_on_says_there_is_no_window(scratch: Path) -> None:
    """raw.payments, which the production version's features derive from, has no test: blind-window answers
    (exit 0, no failing run, no cause) by any of its names, as impact does, where it said no such dataset."""
    with tempfile.TemporaryDirectory(dir=scratch) as workdir:
        s = shop(FAILING_STAGING_TEST, Path(workdir))
        for name in ("payments", RAW_DBT, "source.shop.raw.payments"):
            window = _cli(s, "blind-window", name)
            assert window != REFUSED and (window["exit"], window["assertions"], window["causes"]) == (0, [], []), window
        result = CliRunner().invoke(cli, ["blind-window", "raw.payments"], env=s.env)
        assert result.exit_code == 0 and "No failing run recorded for raw.payments" in result.output, result.output
