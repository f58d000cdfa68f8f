"""``recall init``: what a team needs to start, written next to its project.

DataHub recipes for its stack (dbt with the write semantics its sink needs,
mlflow, feast when it has a feature repository), for a DataHub Lite file or a
GMS, and a commented starter ``recall.yaml``; then the order of commands that
keeps every artifact DataHub's dbt source reads. Run in a repository's root
with no ``--dbt-project``, it takes the one dbt project it finds there. Existing files are kept
unless ``--force``: a second run changes nothing.

Exit codes: 0 written (or already there), 2 bad usage (a dbt project without a
profile, several dbt projects and none named, nothing to write recipes for).
"""

from __future__ import annotations

import json
import os
from importlib.metadata import version
from pathlib import Path

import click

from recall_dagster import recipes
from recall_dagster.ingest_env import unreadable_store
from recall_dagster.warehouse import dbt_target
from recall_dagster.cli import cli
from recall_dagster.errors import ConfigError

STARTER = """\
# recall.yaml: only what differs from the shipped defaults (recall_dagster/recall.yaml lists every key).
# Point RECALL_CONFIG (or --config) at this file.

# production:                      # what marks a version production, besides a live deployment
#   aliases: [production, prod, champion]   # MLflow aliases, compared without case (read from the registry)
#   stage_tags: [mlflow_production]

# freshness:
#   default_window_hours: 36       # a training input older than this is stale
#   windows: {"marts.*": 26}       # per table (glob over the dataset name)

# lifecycle:
#   row_counts: {"{platform}:*": env:RECALL_WAREHOUSE_URL}   # where the gate counts rows, before the dbt profile
#   gate:
#     required: [failing_assertions, input_freshness]   # skipped -> UNVERIFIED (exit 4)
#     advisory: [ownership]        # shown as WARN, never refusing a retrain
#     block_unverified: true       # the Dagster gate refuses a retrain on UNVERIFIED

# dagster:
#   scan_after: []                 # asset keys the scan runs after (your ingestion asset)
#   nightly_scan_cron: "0 2 * * *"
"""


@cli.command("init")
@click.option("--dir", "folder", type=click.Path(file_okay=False, path_type=Path), default=Path("."),
              show_default=True, help="Where recipes/ and recall.yaml are written.")
@click.option("--dbt-project", type=click.Path(file_okay=False, path_type=Path),
              help="The dbt project folder [default: the one under the current folder].")
@click.option("--profiles-dir", type=click.Path(file_okay=False, path_type=Path), help="Where profiles.yml is.")
@click.option("--feast-repo", type=click.Path(file_okay=False, path_type=Path), help="A Feast repository.")
@click.option("--graph", "graph_target", metavar="FILE|URL",
              help="DataHub Lite file or GMS URL the recipes write to [env RECALL_GRAPH; default ./datahub.db].")
@click.option("--mlflow", "mlflow_uri", metavar="URI", help="MLflow tracking URI [env MLFLOW_TRACKING_URI].")
@click.option("--force", is_flag=True, help="Overwrite files that are already there.")
def init_command(
    folder: Path, dbt_project: Path | None, profiles_dir: Path | None, feast_repo: Path | None,
    graph_target: str | None, mlflow_uri: str | None, force: bool,
) -> None:
    """Write DataHub recipes for your dbt, MLflow and Feast, a starter recall.yaml, and the commands to run."""
    graph = graph_target or os.environ.get("RECALL_GRAPH") or str((folder / "datahub.db").resolve())
    tracking = mlflow_uri or os.environ.get("MLFLOW_TRACKING_URI")
    remote = graph.startswith(("http://", "https://"))
    sink = recipes.sink_config(graph, "DATAHUB_GMS_TOKEN" if remote else None)
    planned: dict[str, dict] = {}
    platform = None
    if dbt_project is None:
        dbt_project = found_dbt_project(Path.cwd())
        if dbt_project is not None:
            click.echo(f"found the dbt project {dbt_project} (its dbt_project.yml); --dbt-project names another",
                       err=True)
    if dbt_project is not None:
        target = dbt_target(dbt_project.resolve(), profiles_dir.resolve() if profiles_dir else None)
        target_dir, platform = target.target_dir, target.platform
        planned["dbt"] = recipes.dbt_recipe(target_dir, platform, sink)
        warehouse = recipes.warehouse_recipe(target, sink)
        if warehouse is None:
            click.echo(f"no recipe for the {platform} warehouse itself: DataHub has no {platform} source, so the "
                       "dbt source's catalog alone says what the warehouse holds", err=True)
        else:
            planned[platform] = warehouse
            click.echo(f"the {platform} recipe reads {recipes.WAREHOUSE_WHY}", err=True)
    if tracking:
        planned["mlflow"] = recipes.mlflow_recipe(tracking, sink, platform)
        unreadable = unreadable_store(tracking, version("mlflow-skinny"))
        if unreadable:
            click.secho(f"note: {unreadable}", fg="yellow", err=True)
    if feast_repo is not None:
        planned["feast"] = recipes.feast_recipe(feast_repo.resolve(), sink)
    if not planned:
        raise ConfigError("nothing to write recipes for: give --dbt-project, --mlflow (or MLFLOW_TRACKING_URI) "
                          "or --feast-repo")
    config = folder / "recall.yaml"
    paths = {name: folder / "recipes" / f"{name}.yml" for name in planned}
    kept = [t for t in [*paths.values(), config] if t.exists() and not force]
    for name, recipe in planned.items():
        if paths[name] not in kept:
            click.echo(f"wrote {recipes.write_recipe(folder / 'recipes', name, recipe)}")
    if config not in kept:
        folder.mkdir(parents=True, exist_ok=True)
        config.write_text(_starter(dbt_project, profiles_dir, platform, paths.get("dbt")), encoding="utf-8")
        click.echo(f"wrote {config}")
    for path in kept:
        click.echo(f"kept {path} (already there; --force overwrites it)")
    click.echo("\nThen, in this order:")
    if "dbt" in planned:
        for command, why in recipes.DBT_ORDER:
            click.echo(f"  {command.replace('target/', f'{target_dir}/')}  # {why}")
    for n, path in enumerate(paths.values()):
        why = "  # DataHub's sources, in an environment of their own: their pins would rewrite this one" if not n else ""
        click.echo(f"  recall ingest {path}{why}")
    click.echo(f"  RECALL_GRAPH={graph} RECALL_CONFIG={config} recall scan")
    if "dbt" in planned:
        click.echo("  (dbt inside Dagster: merge recall_definitions(recall, dbt=<your dbt assets>); its dbt_metadata "
                   "asset ingests what dagster-dbt ran, named by dagster.dbt_recipe: no dbt command, no copy)")


# Folders a dbt project is never in: dbt's own output and packages, environments, version control.
NOT_PROJECTS = frozenset({"target", "dbt_packages", "dbt_modules", "logs", "node_modules", "site-packages",
                          "__pycache__"})


def found_dbt_project(root: Path, depth: int = 3) -> Path | None:
    """The one dbt project in or under the folder init runs in (a team runs it in its repository's root), None
    when there is none; several are a usage error naming each, since which one trains the models is the team's
    to say."""
    found: list[Path] = []
    for folder, subfolders, files in os.walk(root):
        level = len(Path(folder).relative_to(root).parts)
        subfolders[:] = sorted(d for d in subfolders if level < depth and not d.startswith(".")
                               and d not in NOT_PROJECTS)
        if "dbt_project.yml" in files:
            found.append(Path(folder))
    if len(found) > 1:
        named = ", ".join(str(p.relative_to(root)) or "." for p in found)
        raise ConfigError(f"found {len(found)} dbt projects here ({named}): name one with --dbt-project")
    return found[0] if found else None


def _starter(dbt_project: Path | None, profiles_dir: Path | None, platform: str | None,
             dbt_recipe: Path | None) -> str:
    """The starter file; with a dbt project, its ``warehouse`` section names it, so row counts and the impact
    query reach the warehouse through the profile dbt already uses, and ``dagster.dbt_recipe`` names the dbt
    recipe, so in Dagster (``recall_definitions(dbt=...)``) what dagster-dbt ran reaches the graph before each
    scan with no copy step."""
    text = STARTER.replace("{platform}", platform or "postgres")
    if dbt_project is None:
        return text
    lines = ["", "warehouse:                         # your dbt profile's target reaches the warehouse",
             f"  dbt_project: {json.dumps(str(dbt_project.resolve()))}"]
    if profiles_dir is not None:
        lines.append(f"  profiles_dir: {json.dumps(str(profiles_dir.resolve()))}")
    if dbt_recipe is not None:  # the example's section, live, its other keys still commented
        text = text.replace("# dagster:\n", f"dagster:\n  dbt_recipe: {json.dumps(str(dbt_recipe.resolve()))}"
                                             "  # recall_definitions(dbt=your dbt assets) ingests them first\n", 1)
    return text + "\n".join(lines) + "\n"
