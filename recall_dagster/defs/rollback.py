"""The ``recall_rollback`` job: ``recall rollback MODEL --to VERSION --apply``, launched by a person in Dagster.

The run config names the model, the version, who and why; the ``blind_window``
asset's metadata carries it filled in for each model it advises rolling back
(:func:`rollback_run_config`), so the launchpad takes it as pasted and the
person adds their name. The op runs
:func:`recall_dagster.lifecycle.rollback_service.roll_back`, the CLI's function,
and the run's id goes into the record the registry and DataHub keep.
"""

from typing import Any, Mapping
from urllib.parse import quote, urlencode

import yaml

from dagster import Config, Failure, JobDefinition, MetadataValue, OpExecutionContext, Output, job, op
from pydantic import Field

from recall_dagster.clock import clock_ms
from recall_dagster.defs._compat import USER_TAG
from recall_dagster.defs.resources import RecallResource
from recall_dagster.defs.translator import RecallTranslator
from recall_dagster.errors import RecallError
from recall_dagster.lifecycle.rollback import RollbackRequest
from recall_dagster.lifecycle.rollback_service import Registry, RollbackResult, roll_back
from recall_dagster.markdown import md_list
from recall_dagster.shown import shown

OP = "roll_back"
JOB = "recall_rollback"  # its name unless a translator says otherwise
RUN_TAG_PREFIX = "recall/rollback/"


class RollbackConfig(Config):
    """What ``recall rollback`` takes on its command line."""

    model: str = Field(description="The registered model, as the registry names it.")
    to_version: str = Field(description="The registry version its production alias moves back to.")
    by: str = Field(default="", description="Who rolls back, recorded in MLflow and DataHub; when empty, the "
                                            "user who launched the run (Dagster+ tags it), else the run is refused.")
    reason: str = Field(default="", description="Why; the blind window's verdict on the version when empty.")
    force: bool = Field(default=False, description="Roll back to a version the blind window convicts or cannot clear.")


def rollback_run_config(model: str, to_version: str, reason: str = "") -> dict[str, Any]:
    """Run config for the rollback job as the launchpad takes it: who (``by``) is the launching user, or the
    name the person types there."""
    config = {"model": model, "to_version": to_version, **({"reason": reason} if reason else {})}
    return {"ops": {OP: {"config": config}}}


def rollback_yaml(model: str, to_version: str) -> str:
    """The run config as the launchpad shows it, asking by name for who rolls back: the empty ``by`` launches
    as the launching user where Dagster knows one (Dagster+), and is refused by name, moving nothing, where
    it does not."""
    return (yaml.safe_dump(rollback_run_config(model, to_version), sort_keys=False)
            + f"      by: ''  # {BY_PROMPT}\n")


def launchpad_url(location: str, repository: str, job: str, config: str) -> str:
    """``job``'s launchpad with ``config`` filled in: Dagster's UI opens a launchpad tab from the run config a
    ``playground/setup`` address carries. Relative to the server's root, so it opens on whichever webserver shows
    it, at whatever address and port it serves (``dagster.webserver_url`` is for links read outside Dagster)."""
    path = f"/locations/{quote(repository)}@{quote(location)}/jobs/{quote(job)}/playground/setup"
    return f"{path}?{urlencode({'config': config}, quote_via=quote)}"


BY_PROMPT = "who rolls back: your name, kept in MLflow and DataHub"


def who_rolls_back(config: RollbackConfig, run_tags: Mapping[str, str]) -> str:
    """The name a rollback is recorded under: the config's, else the launching user's (Dagster+ tags a run
    with it); a rollback nobody answers for is refused before anything moves, saying where to name them."""
    by = config.by.strip() or run_tags.get(USER_TAG, "").strip()
    if not by:
        raise Failure(description=f"name who rolls back {config.model}: set by in the launchpad's config "
                                  f"(ops.{OP}.config.by); nothing was moved")
    return by


def _metadata(result: RollbackResult) -> dict[str, Any]:
    plan, after = result.plan, result.after
    moved = ", ".join(f"{m.alias}: {m.from_version} -> {plan.to_version}" for m in plan.moves) or "nothing"
    metadata: dict[str, Any] = {
        "summary": shown(f"{plan.model}: moved {moved}" + ("" if after is None else
                         f"; now served {'clean' if after.clean else 'not provably clean'}")),
        "plan": MetadataValue.md(md_list(plan.lines())),
        "moved": moved,
        "document": result.document or "none",
    }
    if result.record is not None:
        metadata.update(by=result.record.by, reason=result.record.reason, at=result.record.at)
    if after is not None:
        metadata["served_clean"] = after.clean
        metadata["served"] = ", ".join(f"{a}: {v.name if v else 'not in the graph'} "
                                       f"({v.verdict.status.value if v else 'unjudged'})"
                                       for a, v in sorted(after.served.items()))
        metadata["contaminated_live"] = ", ".join(after.contaminated_live) or "none"
    return metadata


@op(name=OP)
def _roll_back(context: OpExecutionContext, config: RollbackConfig, recall: RecallResource) -> Output[dict]:
    """Move the production alias, record who and why in MLflow and DataHub, and scan the model again."""
    settings, loaded = recall.settings(), recall.configuration()
    by = who_rolls_back(config, context.run.tags)
    request = RollbackRequest(config.model, config.to_version, config.reason.strip(), by, config.force)
    try:
        result = roll_back(
            recall.open_graph, settings, loaded, Registry(settings.mlflow_uri, loaded.impact.registry), request,
            clock_ms(), apply=True, run=context.run_id,
        )
    except RecallError as err:
        raise Failure(description=str(err)) from None
    metadata = _metadata(result)
    for line in result.plan.lines():
        context.log.info(shown(line))
    context.instance.add_run_tags(context.run_id, {
        f"{RUN_TAG_PREFIX}{result.plan.model}": f"version {result.plan.to_version} by {request.by}",
    })
    if result.failures:
        raise Failure(f"the alias moved, but {len(result.failures)} DataHub write(s) did not land; "
                      "running the job again writes them", metadata=metadata)
    return Output(result.contract().as_json(), metadata=metadata)


def rollback_job(translator: RecallTranslator | None = None) -> JobDefinition:
    """Launched by a person from the launchpad, never by a schedule or sensor: it moves production."""

    @job(name=(translator or RecallTranslator()).job_name(JOB), description="Move a model's production alias back to a version the blind window clears, "
                               "record who and why in MLflow and DataHub, and rescan it.")
    def recall_rollback() -> None:
        _roll_back()

    return recall_rollback
