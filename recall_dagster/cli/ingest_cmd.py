"""``recall ingest``: DataHub's ingestion recipes run in an environment of their own (recall_dagster.ingest_env)."""

from __future__ import annotations

from pathlib import Path

import click

from recall_dagster import dbt_artifacts, ingest_env
from recall_dagster.cli import cli
from recall_dagster.recipes import write_recipe
from recall_dagster.settings import env_home


@cli.command("ingest")
@click.argument("recipes", nargs=-1, required=True,
                type=click.Path(dir_okay=False, exists=True, path_type=Path))
def ingest_command(recipes: tuple[Path, ...]) -> None:
    """Run DataHub recipes (`datahub ingest -c`) in an environment of their own, made under RECALL_HOME once."""
    read = [ingest_env.read_recipe(path) for path in recipes]  # every recipe checked before anything installs
    runs = [_as_run(path, recipe) for path, recipe in zip(recipes, read)]
    env = ingest_env.ingest_env(env_home())
    ingest_env.prepare(env, ingest_env.plugins(read, ingest_env.offered_extras()), ingest_env.store_packages(read),
                       _say)
    for path, run in zip(recipes, runs):
        _say(f"datahub ingest -c {run} (in {env.path})")
        ingest_env.ingest(env, run)


def _as_run(path: Path, recipe: dict) -> Path:
    """The recipe as it runs: a dbt recipe reads the artifacts that exist, from a copy under RECALL_HOME that
    says what it left out; the team's file stays as written."""
    runnable, said = dbt_artifacts.readable(recipe)
    for line in said:
        _say(f"{path.name}: {line}")
    if runnable == recipe:
        return path
    return write_recipe(env_home() / "ingest" / "recipes", path.stem, runnable)


def _say(line: str) -> None:
    click.echo(f"recall ingest: {line}", err=True)
