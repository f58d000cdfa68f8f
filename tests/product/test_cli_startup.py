"""`recall --help` starts fast: the listing imports no subcommand, so none of the heavy libraries they use.

Nothing here is timed (benchmarks/cli_startup.py measures it); what is checked is what gets imported.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from recall_dagster.cli import COMMANDS, cli
from tests.scan.scan_estates import ingest

HEAVY = ("pandas", "pyarrow", "mlflow", "dagster", "feast", "datahub", "pydantic")

HELP_AND_MODULES = """
import json, sys
from click.testing import CliRunner
from recall_dagster.cli import cli
result = CliRunner().invoke(cli, ["--help"])
print(json.dumps({"exit_code": result.exit_code, "output": result.output, "modules": sorted(sys.modules)}))
"""


def test_recall_help_lists_every_command_and_imports_no_heavy_library() -> None:
    done = subprocess.run([sys.executable, "-c", HELP_AND_MODULES], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["exit_code"] == 0, seen["output"]
    heavy = sorted({m.split(".")[0] for m in seen["modules"]} & set(HEAVY))
    assert not heavy, f"recall --help imported {heavy}"
    loaded = sorted(m for m in seen["modules"] if m.startswith("recall_dagster.cli."))
    assert not loaded, f"recall --help imported subcommand modules {loaded}"
    listed = {line.split()[0] for line in seen["output"].split("Commands:")[1].splitlines() if line.strip()}
    assert listed == set(COMMANDS)


@pytest.mark.parametrize("args", [[name] for name in COMMANDS] + [
    ["ack", "list"], ["ack", "revoke"], ["incidents", "sync"], ["incidents", "list"],
], ids=" ".join)
def test_every_command_still_answers_help(args: list[str]) -> None:
    result = CliRunner().invoke(cli, [*args, "--help"], prog_name="recall")
    assert result.exit_code == 0, result.output
    assert f"Usage: recall {' '.join(args)}" in result.output


def test_the_listing_shows_each_commands_own_first_help_line() -> None:
    ctx = click.Context(cli, info_name="recall")
    for name, (module, line) in COMMANDS.items():
        command = cli.get_command(ctx, name)
        assert command is not None, f"importing {module} registered no {name!r}"
        assert command.callback.__module__ == module
        assert command.help.splitlines()[0] == line, f"COMMANDS[{name!r}] is not the first line of its docstring"
    assert set(cli.commands) == set(COMMANDS), "a command registered on `cli` is missing from COMMANDS"


def test_every_module_that_registers_on_cli_is_in_the_registry() -> None:
    package = Path(sys.modules["recall_dagster.cli"].__file__).parent
    registering = {f"recall_dagster.cli.{path.stem}" for path in package.glob("*.py") if path.stem != "__init__"
                   and ("@cli.command" in path.read_text() or "@cli.group" in path.read_text())}
    assert registering == {module for module, _ in COMMANDS.values()}


def test_command_modules_still_resolve_as_attributes_of_the_package() -> None:
    import recall_dagster.cli as package

    assert package.scan.scan.name == "scan"
    assert package.dagster_cmd.dagster_home
    with pytest.raises(AttributeError):
        package.no_such_module


GATE_AND_MODULES = """
import json, sys
from click.testing import CliRunner
from recall_dagster.cli import cli
result = CliRunner().invoke(cli, ["gate", "churn_model", "--json", "--graph", sys.argv[1]])
print(json.dumps({"exit_code": result.exit_code, "output": result.output, "modules": sorted(sys.modules)}))
"""


def test_a_gate_with_nothing_to_replay_imports_no_dataframe_library(tmp_path: Path) -> None:
    """The gate judges from the graph; pandas, numpy and SQLAlchemy load only when a finding is replayed on the
    model or rows are counted in a warehouse."""
    graph = ingest(tmp_path / "shop.db", str(Path(__file__).parents[1] / "foreign" / "fixtures" / "estate_stock.json"))
    done = subprocess.run([sys.executable, "-c", GATE_AND_MODULES, str(graph)], capture_output=True, text=True,
                          timeout=300, env={"RECALL_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.splitlines()[-1])
    assert json.loads(seen["output"])["verdict"] in ("GO", "NO-GO", "UNVERIFIED"), seen["output"]
    loaded = sorted({m.split(".")[0] for m in seen["modules"]} & {"pandas", "numpy", "sqlalchemy", "mlflow"})
    assert not loaded, f"recall gate imported {loaded}"
