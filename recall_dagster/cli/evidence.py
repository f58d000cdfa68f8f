"""``recall evidence --model NAME``: the data-governance pack, local files first, then a DataHub document.

Exit codes: 0 the pack was written, 2 bad usage or config (an unknown model), 3 the graph is unreachable or
the document is still pending (the local pack is written either way)."""

from __future__ import annotations

import json

import click
from datahub.emitter.mce_builder import datahub_guid
from datahub.metadata.schema_classes import DocumentInfoClass
from datahub.metadata.urns import DocumentUrn

from recall_dagster.cli import cli
from recall_dagster.cli.options import config_option, graph_option, json_option, opened_graph
from recall_dagster.errors import EXIT_UNREACHABLE
from recall_dagster.estate.marks import MANAGED_BY_KEY
from recall_dagster.governance import evidence_pack, markdown, write_pack
from recall_dagster.clock import clock_ms
from recall_dagster.config.load import load
from recall_dagster.settings import Settings
from recall_dagster.writeback.direct import write_changed
from recall_dagster.writeback.documents import recall_document
from recall_dagster.writeback.state import GraphState
from recall_dagster.writeback.writes import Write


@cli.command("evidence")
@click.option("--model", required=True, metavar="NAME|NAME/VERSION|URN", help="The model the pack is about.")
@click.option("--no-write", is_flag=True, help="Keep the pack local: write no DataHub document.")
@graph_option
@config_option
@json_option
@click.pass_context
def evidence_command(
    ctx: click.Context, model: str, no_write: bool, graph_target: str | None, config_path: str | None, as_json: bool
) -> None:
    """Data sources and lineage, checks and results, personal data, gaps, incidents, versions: regenerated now."""
    loaded = load(config_path)
    config, lc = loaded.scan, loaded.lifecycle
    settings = Settings.from_env(graph=graph_target)
    now_ms = clock_ms()
    failures: list[str] = []
    settings.ensure_home()
    with opened_graph(settings, read_only=no_write) as graph:
        answer = evidence_pack(graph, settings, config, lc, model, now_ms)
        pack = answer.as_json()
        paths = write_pack(settings.evidence_dir, pack)
        if not no_write:
            urn = DocumentUrn(datahub_guid({"recall": "governance", "model": pack["model"]})).urn()

            def document(state: GraphState) -> list[Write]:
                info = recall_document(
                    f"Data governance evidence: {pack['model']}", markdown(pack), f"recall-governance:{pack['model']}",
                    pack["judged"], {MANAGED_BY_KEY: "recall-governance"}, state.aspect(urn, DocumentInfoClass), now_ms,
                )
                return [Write.of("document", urn, info, info.title or urn)]

            _, failures = write_changed(graph, [urn], [DocumentInfoClass], document,
                                        loaded.writeback.retry)
    if as_json:
        answer.files, answer.failures = [str(p) for p in paths], failures
        click.echo(json.dumps(answer.as_json(), indent=2))
    else:
        click.echo(markdown(pack))
        click.echo(f"Evidence: {', '.join(str(p) for p in paths)}")
    if failures:
        ctx.exit(EXIT_UNREACHABLE)
