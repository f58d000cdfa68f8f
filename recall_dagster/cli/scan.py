"""``recall scan``: which production models are about to break, and why.

Exit codes: 0 no model reaches the fail tier, 1 one does, 2 bad usage or
config, 3 the graph is unreachable.
"""

from __future__ import annotations

import json
import os
import time
from datetime import datetime, timezone
from pathlib import Path

import click
from rich.console import Console

from recall_dagster.cli import cli
from recall_dagster.errors import EXIT_FINDINGS, ConfigError, ServiceUnreachable
from recall_dagster.graph import open_graph
from recall_dagster.report import render_report
from recall_dagster.scan import JsonStateStore, load_config, run_scan
from recall_dagster.settings import Settings


def _instant_ms(value: str) -> int:
    """ISO-8601 (``2025-03-01``, ``2025-03-01T12:00:00Z``) to epoch millis; naive means UTC."""
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        raise ConfigError(f"--as-of {value!r} is not an ISO-8601 date or time (e.g. 2025-03-01T12:00:00Z)") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return int(parsed.timestamp() * 1000)


@cli.command("scan")
@click.option("--graph", "graph_target", metavar="FILE|URL", help="DataHub Lite file or GMS URL [env RECALL_GRAPH].")
@click.option("--all", "include_all", is_flag=True, help="Scan every model, not only production ones.")
@click.option("--model", "model_urns", multiple=True, metavar="URN", help="Scan only this model (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print the JSON contract instead of the report.")
@click.option("--as-of", "as_of", metavar="ISO-8601", help="Judge freshness at this instant instead of now.")
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    default=lambda: os.environ.get("RECALL_CONFIG"),
    help="Overrides laid over the shipped recall.yaml [env RECALL_CONFIG].",
)
@click.option("--rebaseline", is_flag=True, help="Accept every current schema as the new baseline.")
@click.pass_context
def scan(
    ctx: click.Context,
    graph_target: str | None,
    include_all: bool,
    model_urns: tuple[str, ...],
    as_json: bool,
    as_of: str | None,
    config_path: str | None,
    rebaseline: bool,
) -> None:
    """Read every production model's upstream closure, find what is about to break, and score it."""
    config = load_config(config_path)
    scanned_at_ms = _instant_ms(as_of) if as_of else int(time.time() * 1000)
    settings = Settings.from_env(graph=graph_target)
    if not settings.graph_is_remote and not Path(settings.graph).expanduser().exists():
        raise ServiceUnreachable(
            f"no metadata graph at {settings.graph}: build the estate first, or point "
            "--graph / RECALL_GRAPH at a DataHub Lite file or a GMS URL"
        )
    graph = open_graph(settings, read_only=True)
    try:
        result = run_scan(
            graph,
            config,
            JsonStateStore(settings.state_dir),
            scanned_at_ms=scanned_at_ms,
            include_all=include_all,
            model_urns=list(model_urns) or None,
            rebaseline=rebaseline,
        )
    finally:
        graph.close()
    unknown = [m.closure.urn for m in result.models if m.closure.model.missing]
    if unknown:
        raise ConfigError(f"no model {', '.join(unknown)} in {result.graph}")
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=2))
    else:
        render_report(result, Console())
    if result.failing:
        ctx.exit(EXIT_FINDINGS)
