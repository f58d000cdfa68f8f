"""``recall protect``: the least reliable datasets on production paths, the untested columns that matter most,
and the dbt tests to add. Exit 0 (a report, not a verdict); 2 bad usage or config, 3 the graph is unreachable."""

from __future__ import annotations

import json

import click
from rich.console import Console
from recall_dagster.terminal import esc, narrow_table

from recall_dagster.cli import cli
from recall_dagster.cli.options import as_of_option, config_option, graph_option, instant_ms, json_option, opened_graph
from recall_dagster.estate import display_name
from recall_dagster.config.load import load
from recall_dagster.protect.service import ProtectReport, protect_report
from recall_dagster.settings import Settings
from recall_dagster.shown import shown


@cli.command("protect")
@graph_option
@config_option
@json_option
@as_of_option
def protect_command(graph_target: str | None, config_path: str | None, as_json: bool, as_of: str | None) -> None:
    """Score every dataset on a production path, rank the untested critical columns, suggest dbt tests."""
    loaded = load(config_path)
    config, pc = loaded.scan, loaded.protect
    settings = Settings.from_env(graph=graph_target)
    with opened_graph(settings, read_only=True) as graph:
        report = protect_report(graph, settings, config, pc, instant_ms(as_of))
    if as_json:
        click.echo(json.dumps(report.contract().as_json(), indent=2))
    else:
        render_protect(report, Console())


def render_protect(report: ProtectReport, console: Console) -> None:
    datasets = narrow_table(("dataset", "name"), ("score", "number", 3), ("", "word", 10), ("weakest", "name"),
                            title="Reliability of datasets on production paths (least reliable first)")
    for r in report.datasets[: report.top]:
        weakest = "; ".join(c.why for c in r.components if c.value < 1) or "-"
        bar = "█" * (r.score // 10) + "░" * (10 - r.score // 10)
        datasets.add_row(esc(display_name(r.dataset)), str(r.score), bar, esc(weakest))
    console.print(datasets)
    gaps = narrow_table(("column", "name"), ("models", "name"), ("live", "number"), ("features", "name"),
                        ("past incident", "word"), title="Untested columns production features read (most exposed first)")
    for g in report.gaps[: report.top]:
        gaps.add_row(esc(display_name(g.column[0]) + "." + g.column[1]), esc(", ".join(g.models)),
                     str(len(g.live_deployments)), esc(", ".join(g.features)), "yes" if g.past_incident else "")
    console.print(gaps)
    if report.dbt_tests:
        console.print("dbt tests to add (merge into the properties files that declare these models and sources):")
        console.print(shown(report.dbt_tests, lines=True), highlight=False, markup=False)
