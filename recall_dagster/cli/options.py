"""Options every ``recall`` command spells the same way, so they read and behave alike."""

from __future__ import annotations

import os

import click

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
