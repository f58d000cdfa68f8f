"""``recall ack DETECTOR SUBJECT --reason TEXT --until DATE [--model NAME]``, ``recall ack list``, ``recall ack revoke ID``.

Exit codes: 0 done, 2 bad usage (no such finding, a date in the past, an
unknown id), 3 the graph is unreachable or the acknowledgement could not be
published (it is on disk, and the next ``recall ack`` or scan still honours it here).
"""

from __future__ import annotations

import json
from datetime import timedelta

import click
from rich.console import Console

from recall_dagster.acks.service import AckRequest, acknowledge, in_force, listing, revoke, who
from recall_dagster.cli import RecallGroup, cli
from recall_dagster.cli.options import config_option, graph_option, json_option, opened_graph
from recall_dagster.contracts.acks import Ack
from recall_dagster.contracts.base import VERSION
from recall_dagster.errors import EXIT_UNREACHABLE, ConfigError
from recall_dagster.clock import clock_ms
from recall_dagster.instants import datetime_ms, iso_instant, parse_instant
from recall_dagster.config.load import load
from recall_dagster.settings import Settings
from recall_dagster.shown import shown
from recall_dagster.terminal import esc

DEFAULT = "accept"


class AckGroup(RecallGroup):
    """``recall ack DETECTOR SUBJECT ...`` runs the hidden ``accept`` command; ``list`` and ``revoke`` are named."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            args = [DEFAULT, *args]
        return super().parse_args(ctx, args)


def until_ms(value: str) -> int:
    """An ISO-8601 date (through the end of that day, UTC) or instant (naive means UTC) as epoch millis."""
    parsed = parse_instant(value, "--until")
    try:
        end = parsed + timedelta(days=1) if len(value.strip()) == 10 else parsed  # a bare date: through that day
    except OverflowError:
        raise ConfigError(f"--until {value!r} lies past the end of the calendar: give a date before 9999-12-31") from None
    return datetime_ms(end)


@cli.group("ack", cls=AckGroup)
def ack() -> None:
    """Accept a finding until a date (`recall ack DETECTOR SUBJECT --reason .. --until ..`), list, revoke."""


@ack.command(DEFAULT, hidden=True)
@click.argument("detector")
@click.argument("subject")
@click.option("--reason", required=True, help="Why the finding is accepted; shown wherever it is.")
@click.option("--until", "until", required=True, metavar="DATE", help="Through this ISO date (UTC), or until an instant.")
@click.option("--model", default=None, metavar="NAME", help="Only on this registered model (default: every model).")
@click.option("--by", default=None, help="Who accepts it [env RECALL_USER, else the login name].")
@click.option("--no-write", is_flag=True, help="Keep it on this machine; publish nothing to DataHub.")
@graph_option
@config_option
@json_option
@click.pass_context
def accept(ctx: click.Context, detector: str, subject: str, reason: str, until: str, model: str | None,
           by: str | None, no_write: bool, graph_target: str | None, config_path: str | None, as_json: bool) -> None:
    """Accept the current DETECTOR finding on SUBJECT (a URN or a name such as raw.transactions)."""
    loaded = load(config_path)
    request = AckRequest(detector, subject, model, reason, until_ms(until), by or who())
    settings = Settings.from_env(graph=graph_target)
    settings.ensure_home()
    with opened_graph(settings, read_only=no_write) as graph:
        made, landed, failures = acknowledge(graph, settings, loaded.scan, request, clock_ms(), loaded.writeback.retry,
                                             write=not no_write)
    if as_json:
        answer = Ack(**made.to_json(), schema_version=VERSION, writes=landed, failures=failures)
        click.echo(json.dumps(answer.as_json(), indent=2))
    else:
        scope = f"on {made.model}" if made.model else "on every model it reaches"
        click.echo(shown(f"acknowledged {made.id}: {made.detector} on {made.subject} {scope} until "
                         f"{iso_instant(made.until_ms)}, by {made.by}"))
        for failure in failures:
            click.secho(shown(f"not published yet: {failure}"), fg="yellow")
    if failures:
        ctx.exit(EXIT_UNREACHABLE)


@ack.command("list")
@graph_option
@config_option
@json_option
def list_command(graph_target: str | None, config_path: str | None, as_json: bool) -> None:
    """Every acknowledgement this instance keeps or the graph publishes: in force, expired, or ignored and why."""
    policy = load(config_path).scan.acknowledgements
    settings = Settings.from_env(graph=graph_target)
    with opened_graph(settings, read_only=True) as graph:
        listed = listing(in_force(graph, settings, policy), clock_ms())
    if as_json:
        click.echo(json.dumps(listed.as_json(), indent=2))
        return
    console = Console()
    if not listed.acknowledgements:
        console.print("no acknowledgements")
    for r in listed.acknowledgements:
        state = ("[green]in force[/green]" if r.in_force else "[dim]expired[/dim]" if r.ignored is None
                 else f"[yellow]ignored: {esc(r.ignored)}[/yellow]")
        said = esc(f"{r.id}  {r.detector} on {r.subject} ({r.model or 'every model'}) until {iso_instant(r.until_ms)} ")
        console.print(f"{said}{state}\n    {esc(r.by)}: {esc(r.reason)}", highlight=False)


@ack.command("revoke")
@click.argument("ack_id", metavar="ID")
@click.option("--by", default=None, help="Who revokes it [env RECALL_USER, else the login name].")
@click.option("--no-write", is_flag=True, help="Drop it here only; leave the DataHub document as it is.")
@graph_option
@config_option
@click.pass_context
def revoke_command(ctx: click.Context, ack_id: str, by: str | None, no_write: bool, graph_target: str | None,
                   config_path: str | None) -> None:
    """Withdraw an acknowledgement: its finding counts again from the next scan."""
    loaded = load(config_path)
    settings = Settings.from_env(graph=graph_target)
    settings.ensure_home()
    with opened_graph(settings, read_only=no_write) as graph:
        gone, _, failures = revoke(graph, settings, ack_id, by or who(), clock_ms(), loaded.scan.acknowledgements,
                                   loaded.writeback.retry, write=not no_write)
    click.echo(shown(f"revoked {gone.id}: {gone.detector} on {gone.subject}"))
    for failure in failures:
        click.secho(shown(f"not unpublished yet: {failure}"), fg="yellow")
    if failures:
        ctx.exit(EXIT_UNREACHABLE)
