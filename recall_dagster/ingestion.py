"""Running a team's DataHub recipes, as ``recall ingest`` and the Dagster ``dbt_metadata`` asset both do.

Every recipe is read and checked before anything installs; a dbt recipe runs from a copy under
``RECALL_HOME/ingest/recipes`` that reads the artifacts that exist (:mod:`recall_dagster.dbt_artifacts`),
so the team's file stays as written; then ``datahub ingest -c`` runs each in the ingestion environment
(:mod:`recall_dagster.ingest_env`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

from recall_dagster import dbt_artifacts, ingest_env
from recall_dagster.recipes import write_recipe


def run_recipes(recipes: Sequence[Path], home: Path, say: Callable[[str], None]) -> list[str]:
    """Run the recipes in order; what was left out of each and why, as said, comes back for the caller's
    record (a Dagster materialization's metadata)."""
    read = [ingest_env.read_recipe(path) for path in recipes]
    noted: list[str] = []
    runs = [_as_run(path, recipe, home, noted) for path, recipe in zip(recipes, read)]
    for line in noted:
        say(line)
    env = ingest_env.ingest_env(home)
    ingest_env.prepare(env, ingest_env.plugins(read, ingest_env.offered_extras()), ingest_env.store_packages(read),
                       say)
    for run in runs:
        say(f"datahub ingest -c {run} (in {env.path})")
        ingest_env.ingest(env, run)
    return noted


def _as_run(path: Path, recipe: dict, home: Path, noted: list[str]) -> Path:
    runnable, said = dbt_artifacts.readable(recipe)
    noted.extend(f"{path.name}: {line}" for line in said)
    if runnable == recipe:
        return path
    return write_recipe(home / "ingest" / "recipes", path.stem, runnable)
