"""``recall verify``: does this DataHub take every write Recall makes, and undo them on heal?

Exit codes: 0 every write path checks out, 1 one does not, 2 bad usage or
config, 3 the graph is unreachable.
"""

from __future__ import annotations

import json

import click

from recall_dagster.cli import cli
from recall_dagster.cli.options import config_option, graph_option, json_option, opened_graph
from recall_dagster.errors import EXIT_FINDINGS
from recall_dagster.clock import clock_ms
from recall_dagster.config.load import load
from recall_dagster.settings import Settings
from recall_dagster.shown import shown
from recall_dagster.writeback.verify import verify


@cli.command("verify")
@graph_option
@json_option
@config_option
@click.pass_context
def verify_command(
    ctx: click.Context, graph_target: str | None, as_json: bool, config_path: str | None
) -> None:
    """Write a scratch model through every write path, read each back, heal it, and remove it."""
    settings = Settings.from_env(graph=graph_target)
    with opened_graph(settings, read_only=False) as graph:
        now_ms = clock_ms()
        loaded = load(config_path)
        result = verify(graph, settings, loaded.scan, loaded.writeback, now_ms)
    if as_json:
        click.echo(json.dumps(result.contract().as_json(), indent=2))
    else:
        click.echo(f"recall verify against {result.graph}")
        for check in result.checks:
            click.echo(shown(f"  {'ok  ' if check.ok else 'FAIL'} {check.phase:<10} {check.path:<9} {check.detail}"))
        for name, present in result.capabilities.items():
            click.echo(f"  capability {name}: {'yes' if present else 'no'}")
        click.echo(f"  removed (soft delete): {len(result.removed)}; left: {', '.join(result.left) or 'nothing'}")
    if not result.ok:
        ctx.exit(EXIT_FINDINGS)
