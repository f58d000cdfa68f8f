"""``recall mcp``: Recall's read-only tools over the Model Context Protocol (stdio, or streamable HTTP)."""

from __future__ import annotations

import click

from recall_dagster.cli import cli
from recall_dagster.cli.options import config_option


@cli.command("mcp")
@click.option("--http", "port", type=int, help="Serve streamable HTTP on this port instead of stdio.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Where --http listens (localhost by default).")
@config_option
def mcp_command(port: int | None, host: str, config_path: str | None) -> None:
    """Serve scan_model, blast_radius, blind_window, retrain_gate, impact_test, explain_finding, list_incidents."""
    from recall_dagster.mcp_server import build_server  # the SDK loads only for this command

    server = build_server(config_path, host=host, port=port or 8000)
    server.run("streamable-http" if port else "stdio")
