"""The incident lifecycle as assets: data incidents raised and resolved, and the blind window.

They run in the scan and rescan jobs, so a failing test that a sensor notices
(in Dagster or in DataHub) becomes an incident naming the poisoned features,
and a passing one its postmortem.
"""

from typing import Any, Mapping, Sequence


from dagster import AssetExecutionContext, AssetKey, AssetsDefinition, Failure, MaterializeResult, MetadataValue

from recall_dagster.defs.resources import RecallResource
from recall_dagster.clock import clock_ms
from recall_dagster.lifecycle.service import blind_window_report, sync_incidents
from recall_dagster.lifecycle.markdown import blind_window_table, incidents_table
from recall_dagster.defs.rollback import JOB, launchpad_url, rollback_yaml
from recall_dagster.defs.translator import RecallTranslator, recall_asset
from recall_dagster.lifecycle.assess import ModelVersions
from recall_dagster.lifecycle.verdict import VersionVerdict
from recall_dagster.lifecycle.rollback import advised, combined
from recall_dagster.markdown import md_text
from recall_dagster.shown import shown



def _data_incidents(deps: Sequence[AssetKey | str], translator: RecallTranslator) -> AssetsDefinition:
    @recall_asset(translator, "data_incidents", deps=list(deps), kinds={"datahub"})
    def data_incidents(recall: RecallResource) -> MaterializeResult:
        """``recall incidents sync``: raise, update and resolve incidents to match the tests now."""
        settings, loaded = recall.settings(), recall.configuration()
        with settings.writing("incidents", "data_incidents"), recall.open_graph(read_only=False) as graph:
            synced = sync_incidents(
                graph, settings, loaded.scan, loaded.lifecycle, clock_ms(), loaded.writeback.retry
            ).contract().as_json()
        counts = {what: len(synced[what]) for what in ("raised", "updated", "resolved", "active")}
        metadata: dict[str, Any] = {
            "summary": ", ".join(f"{n} {what}" for what, n in counts.items()) + " incident(s)",
            **counts,
            "incidents": MetadataValue.md(incidents_table(synced)),
        }
        if synced["failures"]:
            raise Failure(f"{len(synced['failures'])} incident write(s) did not land; the next run retries them",
                          metadata=metadata)
        return MaterializeResult(metadata=metadata)

    return data_incidents


def _blind_window(translator: RecallTranslator) -> AssetsDefinition:
    rollback = translator.job_name(JOB)

    @recall_asset(translator, "blind_window", deps=[translator.asset_key("data_incidents")])
    def blind_window(context: AssetExecutionContext, recall: RecallResource) -> MaterializeResult:
        """``recall blind-window``: which model versions trained while the data was bad, and where to roll back
        (with the run config of the rollback job that does it, and a link to its launchpad filled in)."""
        origin = context.run.remote_job_origin
        where = None if origin is None else (origin.location_name, origin.repository_origin.repository_name)
        return _window(recall, rollback, where)

    return blind_window


def _window(recall: RecallResource, rollback: str, where: tuple[str, str] | None) -> MaterializeResult:
    """The blind window's metadata; ``where`` (code location, repository) is the run's, whose webserver
    serves the rollback job's launchpad (None in a run that knows no code location: no link)."""
    loaded = recall.configuration()
    with recall.open_graph() as graph:
        judged = blind_window_report(graph, loaded.scan, loaded.lifecycle, None, clock_ms())
    report, models = judged.contract().as_json(), combined(judged.causes)
    targets = sorted(advised(models).items())
    links = {} if where is None else {
        f"rollback: {model}": MetadataValue.url(
            launchpad_url(*where, rollback, rollback_yaml(model, str(target.version))))
        for model, target in targets
    }
    return MaterializeResult(
        metadata={
            "summary": shown(window_line(report, models)),
            **links,
            "contaminated_live": ", ".join(report["contaminated_live"]) or "none",
            "unknown_live": ", ".join(report["unknown_live"]) or "none",
            "versions_judged": f"{report['coverage']['judged']} of {report['coverage']['versions']}",
            "versions": MetadataValue.md(blind_window_table(report)),
            "rollback_run_config": MetadataValue.md(_rollback_configs(targets, rollback)),
        }
    )


SCORES_DIFFER = (
    "The target is the newest version trained outside every blind window. `risk_scores` may rate it as badly as "
    "the version it replaces: a finding that holds for every version (a serving path training never read, an "
    "owner who left) scores them all, but does not make the older version unsafe to roll back to."
)


def window_line(report: Mapping[str, Any], models: Sequence[ModelVersions]) -> str:
    """The blind window in one line: which live versions trained on bad data, and each model's next step,
    judged over every cause at once (:func:`~recall_dagster.lifecycle.rollback.combined`, the advice the
    rollback job takes)."""
    live = [*report["contaminated_live"], *report["unknown_live"]]
    if not live:
        return f"no live version trained in a blind window ({report['coverage']['judged']} version(s) judged)"
    steps = (f"{m.name}: {m.rollback_note}" for m in sorted(models, key=lambda m: m.name))
    return f"live on bad data: {', '.join(live)}; " + "; ".join(steps)


def _rollback_configs(targets: Sequence[tuple[str, VersionVerdict]], job: str) -> str:
    """For each model the blind window advises rolling back, the rollback ``job``'s run config to paste into
    its launchpad (the ``rollback: <model>`` link opens it filled in)."""
    blocks = [
        md_text(f"{model}: roll back to version {target.version} ({target.name}: {target.verdict.reason})")
        + f"\n\n```yaml\n{rollback_yaml(model, str(target.version))}```"
        for model, target in targets
    ]
    if not blocks:
        return f"no model to roll back: launch {job} only with a version the blind window clears"
    return "\n\n".join([*blocks, SCORES_DIFFER])


def recall_incident_assets(
    deps: Sequence[AssetKey | str] = (), translator: RecallTranslator | None = None,
) -> list[AssetsDefinition]:
    """``data_incidents → blind_window``, after ``deps`` (the team's DataHub ingestion, say), named by
    ``translator``."""
    t = translator or RecallTranslator()
    return [_data_incidents(deps, t), _blind_window(t)]
