"""Options every ``recall`` command spells the same way, so they read and behave alike."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import click

from recall_dagster.clock import clock_ms
from recall_dagster.errors import ServiceUnreachable
from recall_dagster.graph import MetadataGraph, open_graph
from recall_dagster.instants import datetime_ms, parse_instant
from recall_dagster.settings import Settings

graph_option = click.option(
    "--graph", "graph_target", metavar="FILE|URL", help="DataHub Lite file or GMS URL [env RECALL_GRAPH]."
)
config_option = click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    default=lambda: os.environ.get("RECALL_CONFIG"),
    help="Overrides laid over the shipped recall.yaml [env RECALL_CONFIG].",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print the JSON contract instead of text.")
as_of_option = click.option(
    "--as-of", "as_of", metavar="ISO-8601",
    help="Answer as of this instant instead of now: changes, test runs and builds recorded after it are not known.",
)


def instant_ms(as_of: str | None) -> int:
    """The instant a command answers at: ``--as-of`` when given (every read honours it), else now."""
    return clock_ms() if as_of is None else datetime_ms(parse_instant(as_of, "--as-of"))


@contextmanager
def opened_graph(settings: Settings, read_only: bool) -> Iterator[MetadataGraph]:
    """The graph a command works on, closed after; a Lite file that is not there is never created.

    A mistyped ``--graph`` path must exit 3, not leave an empty store behind
    that a write would then fill.
    """
    if not settings.graph_is_remote and not Path(settings.graph).expanduser().exists():
        raise ServiceUnreachable(
            f"no metadata graph at {settings.graph}: build the estate first, or point "
            "--graph / RECALL_GRAPH at a DataHub Lite file or a GMS URL"
        )
    graph = open_graph(settings, read_only=read_only)
    try:
        yield graph
    finally:
        graph.close()
