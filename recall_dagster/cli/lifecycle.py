"""``recall blind-window``, ``recall gate`` and ``recall incidents``: the data-incident lifecycle.

Thin wiring over :mod:`recall_dagster.lifecycle.service`, the functions the
Dagster assets, checks and sensor call.  Exit codes: ``gate`` 0 GO / 1 NO-GO /
4 UNVERIFIED; ``blind-window`` 1 when a live deployment serves a CONTAMINATED
version, else 4 when one serves a version whose training time is unknown or
that the failure reaches only as a suspect (SUSPECT);
2 bad usage or config, 3 the graph is unreachable.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

import click
from rich.console import Console

from recall_dagster.cli import cli
from recall_dagster.cli.options import as_of_option, config_option, graph_option, instant_ms, json_option, opened_graph
from recall_dagster.errors import EXIT_FINDINGS, EXIT_OK, EXIT_UNVERIFIED
from recall_dagster.estate import display_name
from recall_dagster.graph.port import location_of
from recall_dagster.config.load import load
from recall_dagster.impact.measured import mlflow_measure
from recall_dagster.clock import clock_ms
from recall_dagster.instants import iso_instant
from recall_dagster.lifecycle.blast import describe
from recall_dagster.estate.columns import column_name
from recall_dagster.lifecycle.retrain_gate import GateResult
from recall_dagster.lifecycle.records import AssertionRecord
from recall_dagster.lifecycle.service import (
    BlindWindowReport,
    SyncResult,
    blind_window_report,
    judge_retrain,
    list_incidents,
    sync_incidents,
)
from recall_dagster.rewrite import Rewrite
from recall_dagster.narrate import window_paragraph
from recall_dagster.settings import Settings
from recall_dagster.terminal import esc



def _echo_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2))


@cli.command("blind-window")
@click.argument("target", required=False)
@graph_option
@config_option
@json_option
@as_of_option
@click.pass_context
def blind_window_command(
    ctx: click.Context, target: str | None, graph_target: str | None, config_path: str | None, as_json: bool,
    as_of: str | None,
) -> None:
    """When was the data behind TARGET bad, which model versions trained on it, and where to roll back.

    TARGET is an assertion (URN or dbt test name) or a dataset (URN or name);
    without it, every root cause with a failing run in its history.
    """
    loaded = load(config_path)
    config, lc = loaded.scan, loaded.lifecycle
    settings = Settings.from_env(graph=graph_target)
    with opened_graph(settings, read_only=True) as graph:
        report = blind_window_report(graph, config, lc, target, instant_ms(as_of))
    if as_json:
        _echo_json(report.contract().as_json())
    else:
        _render_window(report, Console(), loaded.narration)
    if report.contaminated_live:
        ctx.exit(EXIT_FINDINGS)
    if report.unknown_live or report.suspect_live:
        ctx.exit(EXIT_UNVERIFIED)


def _render_window(report: BlindWindowReport, console: Console, rewrite: Rewrite) -> None:
    _render_unlinked(report.unlinked, console)
    if not report.causes:
        what = report.target or "any assertion"
        if not report.unlinked:
            console.print(f"No failing run recorded for {esc(what)}: there is no blind window.")
        else:
            console.print(f"No model trained on data behind {esc(what)}: no version is contaminated.")
        return
    coverage = report.coverage
    console.print(f"[dim]Coverage: training times known for {coverage.judged} of {coverage.versions} "
                  "version(s) the failures reach[/]", highlight=False)
    for cause in report.causes:
        window, said = cause.window, cause.contract().as_json()
        state = "still failing" if cause.active else "healed"
        console.print(f"[bold]{esc(', '.join(column_name(o) for o in cause.origins))}[/bold] ({state})")
        if window is not None:
            w = window.contract()
            console.print(
                f"  blind window: from {w.onset or 'an unknown time'}"
                f" (last pass {w.began_after or 'never recorded'}, first failure {w.began_by or 'untimed'})"
                f" to {w.end or 'now, still open'}"
            )
        for line in describe(said):
            console.print(f"  {esc(line)}")
        for model in cause.models:
            console.print(f"  [bold]{esc(model.name)}[/bold]: {esc(model.rollback_note)}")
            for v in model.versions:
                colour = {"CONTAMINATED": "red", "CLEAN": "green"}.get(v.verdict.status.value, "yellow")
                serves = [display_name(d) for d in v.live_deployments]
                serves += ["its production mark"] if v.production else []
                serving = f" (serves through {', '.join(serves)})" if serves else ""
                status = f"[{colour}]{v.verdict.status.value:<12}[/{colour}]"
                console.print(f"    {status} {esc(v.name + serving)}: {esc(v.verdict.reason)}")
        console.print(f"  {esc(rewrite(window_paragraph(said)))}", highlight=False)


@cli.command("gate")
@click.argument("model")
@graph_option
@config_option
@json_option
@as_of_option
@click.pass_context
def gate_command(
    ctx: click.Context, model: str, graph_target: str | None, config_path: str | None, as_json: bool,
    as_of: str | None,
) -> None:
    """GO (0) / NO-GO (1) / UNVERIFIED (4) for retraining MODEL.

    MODEL is a registered model name (the version its production alias serves, else its newest),
    NAME/VERSION, or an mlModel URN."""
    loaded = load(config_path)
    config, lc = loaded.scan, loaded.lifecycle
    settings = Settings.from_env(graph=graph_target)
    with opened_graph(settings, read_only=True) as graph:
        measure = mlflow_measure(settings, lc, loaded.impact)
        result = judge_retrain(graph, settings, config, lc, model, instant_ms(as_of), measure)
    if as_json:
        _echo_json(result.contract().as_json())
    else:
        _render_gate(result, Console(), loaded.narration)
    ctx.exit(GATE_EXIT[result.verdict])


GATE_EXIT = {"GO": EXIT_OK, "NO-GO": EXIT_FINDINGS, "UNVERIFIED": EXIT_UNVERIFIED}


def _render_gate(result: GateResult, console: Console, rewrite: Rewrite) -> None:
    colour = {"GO": "green", "NO-GO": "red", "UNVERIFIED": "yellow"}[result.verdict]
    console.print(f"Retrain {esc(result.registered_model)} (judged on {esc(result.name)}): "
                  f"[{colour}]{result.verdict}[/{colour}]")
    if result.reason:
        console.print(f"  {esc(result.reason)}")
    for check in result.unverified_checks:
        console.print(f"  [yellow]required check {check.name} could not measure[/yellow]: {esc(check.summary)}")
    for check in result.checks:
        colour = {"PASS": "green", "WARN": "yellow", "FAIL": "red", "SKIP": "yellow"}[check.status]
        console.print(f"  [{colour}]{check.status:<4}[/{colour}] {check.name}: {esc(check.summary)}")
        for detail in check.details if check.status in ("FAIL", "WARN") else ():
            console.print(f"         - {esc(detail)}")
    for finding, accepted in result.accepted:
        console.print(f"  [dim]relied on acknowledgement {esc(accepted.id)} ({esc(accepted.by)}, until "
                      f"{iso_instant(accepted.until_ms)}): {finding.detector}: {esc(finding.message)}[/dim]",
                      highlight=False)
    console.print()
    console.print(esc(rewrite(result.contract().narrative)), highlight=False)


@cli.group("incidents")
def incidents() -> None:
    """Data incidents raised from failing tests, resolved with a postmortem when they pass."""


@incidents.command("sync")
@graph_option
@config_option
@json_option
def sync_command(graph_target: str | None, config_path: str | None, as_json: bool) -> None:
    """Raise, update and resolve incidents to match the tests now; what the dbt-failure sensor runs."""
    loaded = load(config_path)
    config, lc = loaded.scan, loaded.lifecycle
    policy = loaded.writeback.retry
    settings = Settings.from_env(graph=graph_target)
    settings.ensure_home()
    with settings.writing("incidents", "recall incidents sync"), opened_graph(settings, read_only=False) as graph:
        result = sync_incidents(graph, settings, config, lc, clock_ms(), policy)
    if as_json:
        _echo_json(result.contract().as_json())
    else:
        _render_sync(result, Console())


def _render_sync(result: SyncResult, console: Console) -> None:
    data = result.contract()
    changes = {"raised": data.raised, "updated": data.updated, "resolved": data.resolved}
    for kind, briefs in changes.items():
        for incident in briefs:
            console.print(f"{kind}: " + esc(f"{', '.join(incident.tests)} [{incident.severity}] {incident.urn}"))
            for model in incident.models:
                rows = f", {model.failed_rows:,} failing rows" if model.failed_rows is not None else ""
                console.print("    " + esc(f"{model.name} [{model.severity}]: {model.summary}{rows}"))
            if incident.postmortem:
                console.print(f"    postmortem: {esc(incident.postmortem['document'])}")
    if not any(changes.values()):
        console.print(f"no change; {len(result.active)} incident(s) open")
    for failure in result.failures:
        console.print(f"[yellow]not written yet (retried next sync): {esc(failure)}[/yellow]")
    _render_unlinked(result.unlinked, console)


def _render_unlinked(records: Sequence[AssertionRecord], console: Console) -> None:
    """Failing tests Recall saw and could tie to no model: said, so that "0 causes" never hides a failure."""
    if records:
        console.print(f"[yellow]{len(records)} failing test(s) reach no model (no closure reads their data), so "
                      f"no incident and no blind window:[/yellow] "
                      + esc(", ".join(f"{r.name} on {display_name(r.dataset)}" for r in records)), highlight=False)


@incidents.command("list")
@graph_option
@json_option
def list_command(graph_target: str | None, as_json: bool) -> None:
    """The incidents the ledger holds for this graph, open ones first."""
    settings = Settings.from_env(graph=graph_target)
    listed = list_incidents(settings, location_of(settings.graph))  # the ledger is local: no graph is opened
    if as_json:
        _echo_json(listed.as_json())
        return
    entries = listed.incidents
    console = Console()
    for e in entries:
        names = ", ".join(a["name"] for a in e.snapshot.get("assertions", ()))
        console.print(esc(f"{e.state:<8} {e.urn} {names}"))
    if not entries:
        console.print("no incident recorded for this graph")
