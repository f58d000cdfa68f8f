"""``python -m seed build|break|heal|reset|demo``: the demo estate on the embedded stack, end to end.

The demo is one user of Recall: it builds real systems, injures and heals them,
and hands the scan to the product's own ``recall`` command.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import ContextManager

import click
from rich.console import Console
from rich.table import Table

from recall_dagster.cli import RecallGroup
from recall_dagster.cli.scan import scan
from recall_dagster.progress import Progress, quiet_libraries
from recall_dagster.settings import Settings
from seed import lifecycle


@click.group(cls=RecallGroup)
def estate() -> None:
    """Build, break, heal or reset the demo estate on the embedded stack."""


def _quietly(settings: Settings) -> ContextManager[Path]:
    """Libraries' own chatter (MLflow migrations, warnings) into RECALL_HOME/logs/seed.log, not the terminal."""
    return quiet_libraries(settings.home / "logs" / "seed.log")


@estate.command("build")
@click.option("--scale", type=float, default=None, help="Data volume (1.0 = 200k+ transactions; env RECALL_SCALE).")
def build_command(scale: float | None) -> None:
    """Warehouse, data, dbt, training and ingestion; reuses whatever already exists."""
    settings, progress = Settings.from_env(), Progress()
    with _quietly(settings):
        summary = lifecycle.build(settings, progress, scale=scale)
    _print_summary(summary)


@estate.command("reset")
def reset_command() -> None:
    """Stop the embedded warehouse and the MLflow tracking server, and empty RECALL_HOME."""
    lifecycle.reset(Settings.from_env(), Progress())


@estate.command("demo")
@click.pass_context
def demo_command(ctx: click.Context) -> None:
    """The main job: build the demo estate, print what the graph holds, then `recall scan` it."""
    settings, progress = Settings.from_env(), Progress()
    with _quietly(settings):
        summary = lifecycle.build(settings, progress)
    _print_summary(summary)
    ctx.invoke(scan)


def _print_summary(summary) -> None:
    console = Console()
    entities = Table(title="Metadata graph (DataHub Lite)", show_header=True)
    entities.add_column("entity type")
    entities.add_column("count", justify="right")
    for etype, count in summary.entities.items():
        entities.add_row(etype, str(count))
    console.print(entities)
    tests = summary.dbt.get("test", {})
    if tests:
        console.print(
            "dbt tests: " + ", ".join(f"{n} {status}" for status, n in sorted(tests.items()))
            + (f" — failing: {', '.join(summary.failing_tests)}" if summary.failing_tests else "")
        )
    versions = Table(title="Registered model versions (MLflow)")
    for column in ("model", "version", "aliases"):
        versions.add_column(column)
    for name, version, aliases in summary.versions:
        versions.add_row(name, str(version), ", ".join(aliases) or "—")
    console.print(versions)


@estate.command("break")
@click.option("--scenario", type=click.Choice(lifecycle.SCENARIOS), default="injuries", show_default=True,
              help="injuries: a normal Tuesday (DESIGN §6); regression: a feature's code change, retrained; "
                   "ambiguous: that change and a bad load of the same feature at once; "
                   "bad_load: the device vendor reloads recent rows in percent, retrained.")
def break_command(scenario: str) -> None:
    """Inflict a scenario on the estate; idempotent."""
    settings, progress = Settings.from_env(), Progress()
    with _quietly(settings):
        summary = lifecycle.break_estate(settings, progress, scenario)
    _print_summary(summary)


@estate.command("evaluate")
@click.argument("model")
@click.option("--before", type=click.DateTime(formats=["%Y-%m-%dT%H:%M:%S%z", "%Y-%m-%dT%H:%M:%S.%f%z"]),
              default=None, help="Train only on rows loaded before this ISO-8601 instant (with its offset).")
def evaluate_command(model: str, before: datetime | None) -> None:
    """Fit and score MODEL as training would, recording nothing; the metrics are the last line, as JSON."""
    settings = Settings.from_env()
    with _quietly(settings):
        metrics = lifecycle.evaluate(settings, model, before)
    click.echo(json.dumps(metrics))


@estate.command("dbt-test")
@click.argument("select")
def dbt_test_command(select: str) -> None:
    """Run the dbt tests SELECT picks in this checkout's dbt project; results in its target/run_results.json."""
    settings = Settings.from_env()
    with _quietly(settings):
        summary = lifecycle.dbt_test(settings, select)
    click.echo(json.dumps(summary.counts.get("test", {})))


@estate.command("heal")
def heal_command() -> None:
    """Repair every injury; the next scan stands down by itself."""
    settings, progress = Settings.from_env(), Progress()
    with _quietly(settings):
        summary = lifecycle.heal(settings, progress)
    _print_summary(summary)
