"""``recall scan``: which production models are about to break, and why.

Exit codes: 0 no model reaches the fail tier, 1 one does, 2 bad usage or
config, 3 the graph is unreachable (with ``--write``: or writes are still
pending after retries; the evidence is on disk either way), 4 nothing marks
any version of a registered model (no alias, stage or deployment): it is
named, never passed over.
"""

from __future__ import annotations

import json
from contextlib import ExitStack

import click
from rich.console import Console

from recall_dagster.acks.service import in_force
from recall_dagster.cli import cli
from recall_dagster.cli.options import (
    as_of_option,
    config_option,
    graph_option,
    instant_ms,
    json_option,
    opened_graph,
)
from recall_dagster.errors import EXIT_FINDINGS, EXIT_UNVERIFIED, ConfigError
from recall_dagster.config.load import load
from recall_dagster.clock import clock_ms
from recall_dagster.home_scan import home_pipeline
from recall_dagster.progress import Progress
from recall_dagster.report import render_report
from recall_dagster.settings import Settings
from recall_dagster.shown import shown
from recall_dagster.writeback.report import WritebackReport
from recall_dagster.writeback.run import dry_run, write_back


@cli.command("scan")
@graph_option
@click.option("--all", "include_all", is_flag=True, help="Scan every model, not only production ones.")
@click.option(
    "--model", "models", multiple=True, metavar="NAME|NAME/VERSION|URN",
    help="Scan only this model: a registered name (its production versions), a version, or a URN (repeatable).",
)
@json_option
@as_of_option
@config_option
@click.option(
    "--accept-schema", "accept_schema", multiple=True, metavar="TABLE",
    help="Accept this table's current schema as its baseline (a URN or name; * for every table; repeatable).",
)
@click.option("--write", is_flag=True, help="Write the diagnosis back into the graph (evidence first).")
@click.option("--dry-run", "dry", is_flag=True, help="Print what --write would write, and write nothing.")
@click.option(
    "--full", is_flag=True,
    help="Read every closure from the graph, not only those a change since the last scan reaches.",
)
@click.option(
    "--no-measure", is_flag=True, help="Keep detector severities: replay no finding on its model (impact.measured)."
)
@click.pass_context
def scan(
    ctx: click.Context,
    graph_target: str | None,
    include_all: bool,
    models: tuple[str, ...],
    as_json: bool,
    as_of: str | None,
    config_path: str | None,
    accept_schema: tuple[str, ...],
    write: bool,
    dry: bool,
    full: bool,
    no_measure: bool,
) -> None:
    """Read every production model's upstream closure, find what is about to break, and score it."""
    loaded = load(config_path)
    config = loaded.scan
    writing = write or dry
    if writing and models:
        raise ConfigError(
            "--write and --dry-run need the whole estate: a scan of chosen models would stand down "
            "the incidents and tags of every model it did not look at (drop --model)"
        )
    writeback_config = loaded.writeback if writing else None
    scanned_at_ms = instant_ms(as_of)
    settings = Settings.from_env(graph=graph_target)
    progress = Progress.for_command(as_json)
    settings.ensure_home()
    with ExitStack() as held:
        if write and not dry:  # one write-back at a time, its turn taken before this scan writes anything
            held.enter_context(settings.writing("writeback", "recall scan --write"))
        graph = held.enter_context(opened_graph(settings, read_only=not write or dry))
        pipeline = home_pipeline(settings, loaded, measured=not no_measure)
        with progress.step(f"read the closures of {'every model' if include_all else 'the production models'}"):
            read = pipeline.read(graph, scanned_at_ms=scanned_at_ms, include_all=include_all, models=models,
                                 full=full, acks=in_force(graph, settings, config.acknowledgements))
        with progress.step("run the detectors" + (", replay the findings on their models (impact.measured)"
                                                  if pipeline.measure else "") + " and score"):
            result = pipeline.finish(graph, read, accept_schema=accept_schema)
        report = None
        if writeback_config is not None:
            with progress.step("plan the write-back" if dry else "write back: evidence first, then the graph"):
                run = dry_run if dry else write_back
                report = run(graph, result, settings, writeback_config, clock_ms())
    if as_json:
        written = None if report is None else {**report.to_json(), **({"writes": _writes_json(report)} if dry else {})}
        click.echo(json.dumps(result.contract(written).as_json(), indent=2))
    else:
        render_report(result, Console())
        if report is not None:
            _print_writeback(report)
    if report is not None:
        report.raise_for_status()
    if result.failing:
        ctx.exit(EXIT_FINDINGS)
    if result.without_production.unmarked:
        ctx.exit(EXIT_UNVERIFIED)


def _writes_json(report: WritebackReport) -> list[dict]:
    return [w.to_json() for w in (*report.carried_over, *(report.plan.writes if report.plan else ()))]


def _print_writeback(report: WritebackReport) -> None:
    """One line per write on a dry run; a summary and every failure otherwise."""
    plan, outcome = report.plan, report.outcome
    click.echo()
    if plan is None:
        click.echo(
            f"Write-back {report.run_id}: nothing planned ({outcome.unreachable}); evidence in {report.evidence_dir}"
        )
        return
    unchanged = len(plan.desired) - len(plan.writes)
    if report.dry_run:
        click.echo(f"Dry run {report.run_id}: {len(plan.writes)} write(s) to {report.graph}, {unchanged} already true")
        for write in (*report.carried_over, *plan.writes):
            click.echo(shown(f"  {write.path:<9} {write.aspect_name:<22} {write.urn}  ({write.why})"))
    else:
        click.echo(
            f"Write-back {report.run_id} to {report.graph}: {len(outcome.landed)} landed, {unchanged} already true, "
            f"{len(outcome.refused)} refused, {len(outcome.pending)} pending; evidence in {report.evidence_dir}"
        )
        for write, reason in (*outcome.refused, *outcome.pending):
            click.echo(shown(f"  failed {write.path} {write.urn}: {reason}"), err=True)
    for note in (*report.notes, *(f"{n.channel} {n.event}: {n.error}" for n in report.notices if n.error)):
        click.echo(shown(f"  note: {note}"), err=True)
