"""``recall impact``: replay an upstream change on the production models it reaches, and judge it.

Exit codes: 0 PASS or WARN (or nothing affected), 1 BLOCK, 4 INCOMPLETE (a
model or its evaluation rows could not be had), 2 bad usage or config, 3 the
graph is unreachable or the write-back is still pending (the evidence is on
disk either way).
"""

from __future__ import annotations

import json

import click
from rich.console import Console
from recall_dagster.terminal import esc, narrow_table

from recall_dagster.cli import cli
from recall_dagster.cli.options import config_option, graph_option, json_option, opened_graph
from recall_dagster.errors import EXIT_FINDINGS, EXIT_OK, EXIT_UNREACHABLE, EXIT_UNVERIFIED
from recall_dagster.config.load import load
from recall_dagster.impact.experiment import ImpactReport, describe_change
from recall_dagster.impact.models import MlflowModels
from recall_dagster.impact.mutation_spec import MUTATIONS
from recall_dagster.impact.policy import Verdict
from recall_dagster.impact.publish import ImpactPublished
from recall_dagster.impact.service import ImpactRequest, impact_test, record_impact
from recall_dagster.clock import clock_ms
from recall_dagster.progress import Progress
from recall_dagster.scan_markdown import number
from recall_dagster.settings import Settings
from recall_dagster.shown import shown

IMPACT_EXIT = {
    Verdict.PASS: EXIT_OK,
    Verdict.WARN: EXIT_OK,
    Verdict.BLOCK: EXIT_FINDINGS,
    Verdict.INCOMPLETE: EXIT_UNVERIFIED,
}
COLOURS = {Verdict.PASS: "green", Verdict.WARN: "yellow", Verdict.BLOCK: "red", Verdict.INCOMPLETE: "magenta"}


@cli.command("impact")
@click.argument("dataset")
@click.option("--column", required=True, help="The column the change happens to.")
@click.option(
    "--mutation", required=True, metavar="OP[:ARG]", help=f"The change to replay: {', '.join(MUTATIONS)}."
)
@click.option("--fraction", type=float, help="Share of rows the mutation touches (default all).")
@click.option("--model", "models", multiple=True, metavar="NAME|NAME/VERSION|URN", help="Measure only this model.")
@click.option("--no-write", is_flag=True, help="Keep the evidence local: write nothing to the graph.")
@graph_option
@config_option
@json_option
@click.pass_context
def impact_command(
    ctx: click.Context,
    dataset: str,
    column: str,
    mutation: str,
    fraction: float | None,
    models: tuple[str, ...],
    no_write: bool,
    graph_target: str | None,
    config_path: str | None,
    as_json: bool,
) -> None:
    """Measure what changing DATASET's COLUMN would do to the production models it reaches.

    DATASET is a URN or an unambiguous table name; the models and their
    features come from column-level lineage, and each is measured on the rows
    its training held out, against the version its production alias serves.
    """
    loaded = load(config_path)
    config, lc, ic = loaded.scan, loaded.lifecycle, loaded.impact
    policy = loaded.writeback.retry
    settings = Settings.from_env(graph=graph_target)
    progress = Progress.for_command(as_json)
    now_ms = clock_ms()
    request = ImpactRequest(dataset, column, mutation, fraction, models)
    with opened_graph(settings, read_only=no_write) as graph:
        models_at = MlflowModels(settings.mlflow_uri, ic, loaded.warehouse)
        report = impact_test(graph, config, lc, ic, request, models_at, now_ms, progress.note)
        published = record_impact(None if no_write else graph, settings, report, policy, now_ms)
    if as_json:
        click.echo(json.dumps(report.contract(record=published.contract()).as_json(), indent=2))
    else:
        render_impact(report, Console())
        _render_record(published)
    if published.failures:
        ctx.exit(EXIT_UNREACHABLE)
    ctx.exit(IMPACT_EXIT[report.verdict])



def render_impact(report: ImpactReport, console: Console) -> None:
    verdict = report.verdict
    colour = COLOURS[verdict]
    change = describe_change((report.dataset, report.column), report.mutation)
    console.print(f"Impact of {esc(change)}: [{colour}]{verdict.value}[/{colour}]", highlight=False)
    if not report.results:
        console.print(f"No production model reads {esc(report.target)}: nothing is affected.", highlight=False)
        return
    table = narrow_table(("model", "name"), ("input", "name"), ("verdict", "word", 10), ("metric", "name"),
                         ("flips", "number"), ("failed", "number"), ("rows", "number"))
    measured = [(r, r.contract()) for r in report.results]
    for r, res in measured:
        c = COLOURS[r.verdict]
        metric = f"{res.metric} {number(res.baseline)}→{number(res.mutated)}" if res.metric else "–"
        table.add_row(
            esc(f"{res.model}/{number(res.version)}"),
            esc(res.feature or ""),
            f"[{c}]{r.verdict.value}[/{c}]",
            esc(metric),
            "–" if res.flip_rate is None else f"{res.flip_rate:.1%}",
            number(res.failures),
            "–" if res.rows is None else f"{res.rows:,}",
        )
    console.print(table)
    for r, res in measured:
        ci = f"; delta {number(res.delta)} [{number(res.ci[0])}, {number(res.ci[1])}]" if res.ci else ""
        console.print(esc(f"  {r.closure.model.name} / {r.feature}: {r.reason}{ci}"), highlight=False)


def _render_record(published: ImpactPublished) -> None:
    click.echo(f"\nEvidence: {', '.join(str(p) for p in published.evidence)}")
    if published.failures:
        click.echo(f"Write-back incomplete ({len(published.failures)} write(s)); the evidence holds the experiment:")
        for line in published.failures:
            click.echo(shown(f"  {line}"))
    elif published.writes:
        click.echo(f"Wrote {published.writes} aspect(s) to the graph: the verdict property and a document per model.")
