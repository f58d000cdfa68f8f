"""``recall ingest``: DataHub's ingestion recipes run in an environment of their own (recall_dagster.ingest_env)."""

from __future__ import annotations

from pathlib import Path

import click

from recall_dagster import ingest_env
from recall_dagster.cli import cli
from recall_dagster.settings import env_home


@cli.command("ingest")
@click.argument("recipes", nargs=-1, required=True,
                type=click.Path(dir_okay=False, exists=True, path_type=Path))
def ingest_command(recipes: tuple[Path, ...]) -> None:
    """Run DataHub recipes (`datahub ingest -c`) in an environment of their own, made under RECALL_HOME once."""
    read = [ingest_env.read_recipe(path) for path in recipes]  # every recipe checked before anything installs
    env = ingest_env.ingest_env(env_home())
    ingest_env.prepare(env, ingest_env.plugins(read, ingest_env.offered_extras()), ingest_env.store_packages(read),
                       _say)
    for path in recipes:
        _say(f"datahub ingest -c {path} (in {env.path})")
        ingest_env.ingest(env, path)


def _say(line: str) -> None:
    click.echo(f"recall ingest: {line}", err=True)
