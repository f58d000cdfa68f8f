"""The ``recall`` command: thin wiring over the same functions the Dagster assets call.

Exit codes: 0 healthy / GO, 1 findings at or above the fail level / NO-GO,
2 bad usage or config, 3 a required service is unreachable, 4 UNVERIFIED (evidence a
required check needs is missing).

Subcommands load when used: ``recall --help`` lists them from ``COMMANDS`` below and imports none of
them, so starting the CLI never pays for pandas, pyarrow, MLflow, Dagster, Feast or DataHub's SDK.
"""

from __future__ import annotations

import importlib
import sys
from contextlib import contextmanager
from types import ModuleType
from typing import TYPE_CHECKING, Any, Iterator, TextIO, cast

import click

from recall_dagster.errors import RecallError
from recall_dagster.extras import missing_extra
from recall_dagster.log_streams import root_handlers_onto
from recall_dagster.secrets import redact
from recall_dagster.shown import shown

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem

# Command name -> (the module that registers it on `cli` when imported, the first line of its docstring).
# The help line is what `recall --help` shows without importing the module; keep it the command's own.
COMMANDS: dict[str, tuple[str, str]] = {
    "ack": (
        "recall_dagster.cli.ack",
        "Accept a finding until a date (`recall ack DETECTOR SUBJECT --reason .. --until ..`), list, revoke.",
    ),
    "blind-window": (
        "recall_dagster.cli.lifecycle",
        "When was the data behind TARGET bad, which model versions trained on it, and where to roll back.",
    ),
    "dagster": (
        "recall_dagster.cli.dagster_cmd",
        "Start `dagster dev` (webserver and daemon): scans, reactions and gates in the UI.",
    ),
    "diagnose": (
        "recall_dagster.cli.diagnose",
        "Compare MODEL's candidate version with its baseline; on a regression, rank the causes and prove a repair.",
    ),
    "evidence": (
        "recall_dagster.cli.evidence",
        "Data sources and lineage, checks and results, personal data, gaps, incidents, versions: regenerated now.",
    ),
    "gate": (
        "recall_dagster.cli.lifecycle",
        "GO (0) / NO-GO (1) / UNVERIFIED (4) for retraining MODEL.",
    ),
    "impact": (
        "recall_dagster.cli.impact",
        "Measure what changing DATASET's COLUMN would do to the production models it reaches.",
    ),
    "incidents": (
        "recall_dagster.cli.lifecycle",
        "Data incidents raised from failing tests, resolved with a postmortem when they pass.",
    ),
    "ingest": (
        "recall_dagster.cli.ingest_cmd",
        "Run DataHub recipes (`datahub ingest -c`) in an environment of their own, made under RECALL_HOME once.",
    ),
    "init": (
        "recall_dagster.cli.init_cmd",
        "Write DataHub recipes for your dbt, MLflow and Feast, a starter recall.yaml, and the commands to run.",
    ),
    "mcp": (
        "recall_dagster.cli.mcp_cmd",
        "Serve scan_model, blast_radius, blind_window, retrain_gate, impact_test, explain_finding, list_incidents.",
    ),
    "protect": (
        "recall_dagster.cli.protect",
        "Score every dataset on a production path, rank the untested critical columns, suggest dbt tests.",
    ),
    "rollback": (
        "recall_dagster.cli.rollback",
        "Move MODEL's production alias back to VERSION, record who and why in MLflow and DataHub, and rescan.",
    ),
    "scan": (
        "recall_dagster.cli.scan",
        "Read every production model's upstream closure, find what is about to break, and score it.",
    ),
    "verify": (
        "recall_dagster.cli.verify",
        "Write a scratch model through every write path, read each back, heal it, and remove it.",
    ),
}


class _Redacted:
    """A text stream that masks every secret (:func:`redact`) in what is written to it, then passes it on."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(redact(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextmanager
def _printing_no_secrets() -> Iterator[None]:
    """Everything a command prints, text, tables and ``--json`` alike, with its secrets masked: names and
    descriptions from the graph may hold a URL with its password or a token, and whatever prints them, it is
    here that they leave the process."""
    saved = sys.stdout, sys.stderr
    # a _Redacted passes every other TextIO attribute on to the stream it wraps (__getattr__)
    sys.stdout, sys.stderr = cast(TextIO, _Redacted(saved[0])), cast(TextIO, _Redacted(saved[1]))
    try:
        with root_handlers_onto(sys.stderr, saved[1]):  # libraries' log lines too (log_streams)
            yield
    finally:
        sys.stdout, sys.stderr = saved


class RecallGroup(click.Group):
    """Turns every RecallError, and a module an uninstalled extra brings, into its message and exit code,
    never a traceback; prints no secret, and no escape sequence from a name it quotes (:func:`shown`)."""

    def invoke(self, ctx: click.Context) -> Any:
        with _printing_no_secrets():
            try:
                return super().invoke(ctx)
            except ModuleNotFoundError as err:
                known = missing_extra(err)
                if known is None:
                    raise
                click.secho(f"recall: {known}", fg="red", err=True)
                ctx.exit(known.exit_code)
            except RecallError as err:
                click.secho(shown(f"recall: {err}", lines=True), fg="red", err=True)
                ctx.exit(err.exit_code)


class LazyRecallGroup(RecallGroup):
    """A RecallGroup whose subcommands are imported on first use (click's "LazyGroup" pattern).

    Each lazy module registers its commands on this group with ``@cli.command`` / ``@cli.group`` when it is
    imported; ``get_command`` imports it and returns what it registered. Listing and completing names use the
    help lines in ``lazy_commands`` and import nothing.
    """

    def __init__(self, *args: Any, lazy_commands: dict[str, tuple[str, str]] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy_commands = dict(lazy_commands or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy_commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy_commands:
            importlib.import_module(self.lazy_commands[cmd_name][0])
        return super().get_command(ctx, cmd_name)

    def _summary(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """What a listing needs of a command (name, help, hidden): a stand-in for a lazy one, never an import."""
        if cmd_name in self.lazy_commands:
            return click.Command(cmd_name, help=self.lazy_commands[cmd_name][1])
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # click's Group.format_commands, with _summary in place of get_command.
        commands = []
        for name in self.list_commands(ctx):
            cmd = self._summary(ctx, name)
            if cmd is not None and not cmd.hidden:
                commands.append((name, cmd))
        if commands:
            limit = formatter.width - 6 - max(len(name) for name, _ in commands)
            with formatter.section("Commands"):
                formatter.write_dl([(name, cmd.get_short_help_str(limit)) for name, cmd in commands])

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list[CompletionItem]:
        # click's Group.shell_complete, likewise: completing a command name imports no command.
        from click.shell_completion import CompletionItem

        results = []
        for name in self.list_commands(ctx):
            cmd = self._summary(ctx, name) if name.startswith(incomplete) else None
            if cmd is not None and not cmd.hidden:
                results.append(CompletionItem(name, help=cmd.get_short_help_str()))
        results.extend(click.Command.shell_complete(self, ctx, incomplete))
        return results


@click.group(cls=LazyRecallGroup, lazy_commands=COMMANDS)
def cli() -> None:
    """Tell which production models are about to break, and why."""


def main() -> None:
    cli(standalone_mode=True)


_MODULES = frozenset(module.rpartition(".")[2] for module, _ in COMMANDS.values()) | {"options"}


def __getattr__(name: str) -> ModuleType:
    """``recall_dagster.cli.scan`` and the like still resolve as attributes, imported on first access."""
    if name in _MODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
