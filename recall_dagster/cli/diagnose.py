"""``recall diagnose``: did a retrained version regress, why, and which repair restores it.

Exit codes: 0 PASS (the candidate is within tolerance of its baseline), 1 a
regression (REGRESSION or INCONCLUSIVE: the metric gate failed either way),
4 the gate could not compare any metric, 2 bad usage or config, 3 MLflow or the
graph is unreachable, or the write-back is still pending (the evidence is on disk).
"""

from __future__ import annotations

import json
import os

import click
from rich.console import Console

from recall_dagster.cli import cli
from recall_dagster.cli.options import config_option, graph_option, json_option, opened_graph
from recall_dagster.diagnose.collect import Configs
from recall_dagster.config.load import load
from recall_dagster.diagnose.publish import DiagnosisRecord, record_diagnosis
from recall_dagster.diagnose.service import Diagnosis, diagnose, version_urns
from recall_dagster.errors import EXIT_FINDINGS, EXIT_OK, EXIT_UNREACHABLE, EXIT_UNVERIFIED
from recall_dagster.impact.models import MlflowModels
from recall_dagster.clock import clock_ms
from recall_dagster.progress import Progress
from recall_dagster.scan_markdown import number
from recall_dagster.settings import Settings
from recall_dagster.shown import shown
from recall_dagster.terminal import esc

COLOURS = {"PASS": "green", "REGRESSION": "red", "INCONCLUSIVE": "yellow"}


@cli.command("diagnose")
@click.argument("model")
@click.option("--candidate", metavar="VERSION", help="The version judged (default: the newest).")
@click.option("--baseline", metavar="VERSION", help="What it is judged against (default: the production alias's).")
@click.option("--no-repair", is_flag=True, help="Rank the causes; propose and prove no repair.")
@click.option("--no-write", is_flag=True, help="Keep the evidence local: write nothing to the graph, notify nobody.")
@graph_option
@config_option
@json_option
@click.pass_context
def diagnose_command(
    ctx: click.Context,
    model: str,
    candidate: str | None,
    baseline: str | None,
    no_repair: bool,
    no_write: bool,
    graph_target: str | None,
    config_path: str | None,
    as_json: bool,
) -> None:
    """Compare MODEL's candidate version with its baseline; on a regression, rank the causes and prove a repair."""
    loaded = load(config_path)
    config, lc = loaded.scan, loaded.lifecycle
    dc, ic, wc = loaded.diagnose, loaded.impact, loaded.writeback
    settings = Settings.from_env(graph=graph_target)
    progress = Progress.for_command(as_json)
    now_ms = clock_ms()
    models = MlflowModels(settings.mlflow_uri, ic, loaded.warehouse)
    settings.ensure_home()
    with opened_graph(settings, read_only=no_write) as graph:
        result = diagnose(graph, models.client(), model, Configs(config, lc, dc, ic), models, now_ms,
                          candidate=candidate, baseline=baseline, repair=not no_repair,
                          env={**os.environ, "RECALL_HOME": str(settings.home)}, progress=progress.note)
        record = record_diagnosis(None if no_write else graph, settings.evidence_dir, result,
                                  version_urns(graph, result, config), wc, now_ms)
    if as_json:
        click.echo(json.dumps(result.contract(record=record.contract()).as_json(), indent=2))
    else:
        render_diagnosis(result, record, Console())
    if record.failures:
        ctx.exit(EXIT_UNREACHABLE)
    if result.gate.verdict == "UNVERIFIED":
        ctx.exit(EXIT_UNVERIFIED)
    ctx.exit(EXIT_OK if result.verdict == "PASS" else EXIT_FINDINGS)


def render_diagnosis(d: Diagnosis, record: DiagnosisRecord, console: Console) -> None:
    colour = COLOURS[d.verdict]
    console.print(esc(f"{d.pair.model} version {d.pair.candidate} against version {d.pair.baseline}: ")
                  + f"[{colour}]{d.verdict}[/{colour}]", highlight=False)
    console.print(esc(f"  {d.reason}"), highlight=False)
    for row in d.gate.rows:
        mark = "[red]regressed[/red]" if row.regressed else "ok"
        console.print(esc(f"  {row.name:<18} {number(row.baseline)} -> {number(row.candidate)}  ") + mark,
                      highlight=False)
    for place, h in enumerate(d.hypotheses, 1):
        signals = ", ".join(f"{s.name} {s.value:.2f}" for s in h.signals)
        console.print(f"  {place}. [bold]{h.kind}[/bold] {h.score:.3f}  [dim]({signals})[/dim]", highlight=False)
        for clue in h.evidence[:3]:
            console.print(f"       {esc(clue.detail)}", highlight=False)
        for clue in h.counter[:2]:
            console.print(f"       [dim]against:[/dim] {esc(clue.detail)}", highlight=False)
    for place, r in enumerate(d.repairs):
        state = f"[green]{r.proof}[/green]" if r.validated else f"[yellow]{r.proof}[/yellow]"
        label = "repair" if place == 0 else "or"
        console.print(f"  {label} ({esc(r.strategy)}, {state}): {esc(r.description)}", highlight=False)
        console.print(esc(f"    {r.reason}"), highlight=False)
        if r.metric:
            console.print(esc(f"    {r.metric}: {number(r.metric_before)} -> {number(r.metric_after)}"),
                          highlight=False)
        if r.patch:
            console.print(shown(r.patch.rstrip("\n"), lines=True), highlight=False, markup=False)
    console.print(f"[dim]Evidence: {esc(', '.join(str(p) for p in record.evidence))}[/dim]", highlight=False)
    for line in record.failures:
        console.print(f"[yellow]write-back pending:[/yellow] {esc(line)}", highlight=False)

