"""``recall rollback MODEL --to VERSION``: move the production alias back to a version the blind window clears.

A dry run unless ``--apply``: the plan is printed and nothing is written. Thin
wiring over :func:`recall_dagster.lifecycle.rollback_service.roll_back`, the
function the ``recall_rollback`` Dagster job runs. Exit codes: 0 planned or
done, 2 bad usage (no such version, no production alias to move, a target the
blind window does not clear without ``--force``), 3 the graph or the registry
is unreachable, or the DataHub record did not land (the alias has moved; the
next run writes it).
"""

from __future__ import annotations

import json

import click

from recall_dagster.acks.service import who
from recall_dagster.cli import cli
from recall_dagster.cli.options import config_option, graph_option, json_option, opened_graph
from recall_dagster.clock import clock_ms
from recall_dagster.config.load import load
from recall_dagster.errors import EXIT_UNREACHABLE
from recall_dagster.lifecycle.rollback import RollbackRequest
from recall_dagster.lifecycle.rollback_service import Registry, RollbackResult, roll_back
from recall_dagster.lifecycle.verdict import Status
from recall_dagster.settings import Settings
from recall_dagster.shown import shown


@cli.command("rollback")
@click.argument("model")
@click.option("--to", "to_version", required=True, metavar="VERSION", help="The registry version to roll back to.")
@click.option("--reason", default="", help="Why; recorded in MLflow and DataHub [default: the blind window's verdict].")
@click.option("--by", default=None, help="Who rolls back [env RECALL_USER, else the login name].")
@click.option("--force", is_flag=True, help="Roll back to a version the blind window convicts or cannot clear.")
@click.option("--apply", "apply", is_flag=True, help="Move the alias, record it, and rescan; without it, a dry run.")
@graph_option
@config_option
@json_option
@click.pass_context
def rollback_command(
    ctx: click.Context, model: str, to_version: str, reason: str, by: str | None, force: bool, apply: bool,
    graph_target: str | None, config_path: str | None, as_json: bool,
) -> None:
    """Move MODEL's production alias back to VERSION, record who and why in MLflow and DataHub, and rescan.

    MODEL is the registered model's name. A dry run unless --apply; running it
    again once the alias is there changes nothing.
    """
    loaded = load(config_path)
    settings = Settings.from_env(graph=graph_target)
    request = RollbackRequest(model, to_version, reason.strip(), (by or who()).strip(), force)
    result = roll_back(
        lambda read_only: opened_graph(settings, read_only), settings, loaded,
        Registry(settings.mlflow_uri, loaded.impact.registry), request, clock_ms(), apply=apply,
    )
    if as_json:
        click.echo(json.dumps(result.contract().as_json(), indent=2))
    else:
        _render(result)
    if result.failures:
        ctx.exit(EXIT_UNREACHABLE)


def _render(result: RollbackResult) -> None:
    plan = result.plan
    head = "Rollback" if result.applied else "Dry run (nothing written; --apply to roll back)"
    click.secho(shown(f"{head}: {plan.model} to version {plan.to_version}"), bold=True)
    for line in plan.lines():
        click.echo(shown(f"  {line}"))
    if result.record is not None:
        click.echo(shown(f"  recorded: by {result.record.by} at {result.record.at}: {result.record.reason}"))
    for path in result.evidence:
        click.echo(f"  evidence: {path}")
    if result.document:
        click.echo(f"  DataHub: {result.document} ({result.writes} write(s))")
    for failure in result.failures:
        click.secho(shown(f"  not written yet (the next run writes it): {failure}"), fg="yellow")
    after = result.after
    if after is None:
        return
    for alias, version in sorted(after.served.items()):
        if version is None:
            click.secho(f"  now {alias} serves a version the metadata graph does not hold", fg="yellow")
            continue
        clean = version.verdict.status is Status.CLEAN
        click.secho(shown(f"  now {alias} serves {version.name}: {version.verdict.status.value}, "
                          f"{version.verdict.reason}"), fg="green" if clean else "red")
    for name in after.contaminated_live:
        click.secho(shown(f"  a live deployment still serves {name}, which the blind window convicts"), fg="red")
    for model in after.scanned:
        click.echo(shown(f"  rescanned {model.closure.model.name}: {model.score.tier} ({model.score.value}), "
                         f"{len(model.findings)} open finding(s)"))
