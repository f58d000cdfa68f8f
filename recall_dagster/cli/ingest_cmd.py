"""``recall ingest``: DataHub's ingestion recipes run in an environment of their own (recall_dagster.ingestion)."""

from __future__ import annotations

from pathlib import Path

import click

from recall_dagster.cli import cli
from recall_dagster.ingestion import run_recipes
from recall_dagster.settings import env_home


@cli.command("ingest")
@click.argument("recipes", nargs=-1, required=True,
                type=click.Path(dir_okay=False, exists=True, path_type=Path))
def ingest_command(recipes: tuple[Path, ...]) -> None:
    """Run DataHub recipes (`datahub ingest -c`) in an environment of their own, made under RECALL_HOME once."""
    run_recipes(recipes, env_home(), _say)


def _say(line: str) -> None:
    click.echo(f"recall ingest: {line}", err=True)
