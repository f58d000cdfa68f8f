"""``python -m seed build|break|heal|reset|demo``: the demo estate on the embedded stack, end to end.

The demo is one user of Recall: it builds real systems, injures and heals them,
and hands the scan to the product's own ``recall`` command.
"""

from __future__ import annotations

import json

import click
from rich.console import Console
from rich.table import Table

from recall_dagster.cli import RecallGroup
from recall_dagster.cli.scan import scan
from recall_dagster.progress import Progress
from recall_dagster.settings import Settings
from seed import lifecycle


@click.group(cls=RecallGroup)
def estate() -> None:
    """Build, break, heal or reset the demo estate on the embedded stack."""


@estate.command("build")
@click.option("--scale", type=float, default=None, help="Data volume (1.0 = 200k+ transactions; env RECALL_SCALE).")
def build_command(scale: float | None) -> None:
    """Warehouse, data, dbt, training and ingestion; reuses whatever already exists."""
    summary = lifecycle.build(Settings.from_env(), Progress(), scale=scale)
    _print_summary(summary)


@estate.command("reset")
def reset_command() -> None:
    """Stop the embedded warehouse and empty RECALL_HOME."""
    lifecycle.reset(Settings.from_env(), Progress())


@estate.command("demo")
@click.pass_context
def demo_command(ctx: click.Context) -> None:
    """The main job: build the demo estate, print what the graph holds, then `recall scan` it."""
    summary = lifecycle.build(Settings.from_env(), Progress())
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
                   "ambiguous: that change and a bad load of the same feature at once.")
def break_command(scenario: str) -> None:
    """Inflict a scenario on the estate; idempotent."""
    _print_summary(lifecycle.break_estate(Settings.from_env(), Progress(), scenario))


@estate.command("evaluate")
@click.argument("model")
def evaluate_command(model: str) -> None:
    """Fit and score MODEL as training would, recording nothing; the metrics are the last line, as JSON."""
    click.echo(json.dumps(lifecycle.evaluate(Settings.from_env(), model)))


@estate.command("heal")
def heal_command() -> None:
    """Repair every injury; the next scan stands down by itself."""
    _print_summary(lifecycle.heal(Settings.from_env(), Progress()))
