"""The reactions: a failed test and a new model version each launch a scan of the models they touch.

Three sensors, one rule: which models to rescan is read from the graph's
closures (:mod:`recall_dagster.reactions`), never from a list kept beside it.

- ``datahub_assertion_results`` watches DataHub itself for new failing
  assertion results, whoever reported them (dbt in Dagster, dbt Cloud, Airflow,
  cron, a data-quality tool): the reaction for every team.
- ``mlflow_new_versions`` polls the registry and waits until DataHub holds a
  new version before scanning it by name, so a scan never misses it.
- :func:`dbt_test_failure_sensor` reads a dbt project's test executions from
  the Dagster instance, for a code location that holds both the team's dbt
  assets and Recall's scan job: it reacts before the results reach DataHub.
"""


import hashlib
import json
from typing import Iterable, Sequence, cast

from dagster import (
    AssetsDefinition,
    DefaultSensorStatus,
    JobDefinition,
    RunRequest,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    sensor,
)
from datahub.metadata.schema_classes import AssertionInfoClass, AssertionRunEventClass

from recall_dagster.defs._compat import UnresolvedAssetJobDefinition, latest_check_executions
from recall_dagster.defs.resources import RecallResource
from recall_dagster.defs.scan import scan_run_config
from recall_dagster.defs.translator import RecallTranslator
from recall_dagster.estate import ModelClosure
from recall_dagster.estate.resolve import resolve_closures
from recall_dagster.estate.marks import recall_assertion
from recall_dagster.estate.parse import asserted_entity
from recall_dagster.estate.select import select
from recall_dagster.mlflow_registry import failing, unreachable
from recall_dagster.graph.port import MetadataGraph
from recall_dagster.reactions import (
    AssertionResult,
    Registration,
    highest_versions,
    models_reading,
    unhandled_failures,
    unhandled_versions,
)

STOPPED = DefaultSensorStatus.STOPPED  # merged into a team's location, nothing starts until the team turns it on
Job = JobDefinition | UnresolvedAssetJobDefinition


def _closures(recall: RecallResource, graph: MetadataGraph, include_all: bool = False) -> list[ModelClosure]:
    return resolve_closures(graph, recall.configuration().scan.resolve, include_all=include_all)


def _rescan(run_key: str, models: Sequence[str], trigger: str, translator: RecallTranslator) -> RunRequest:
    return RunRequest(
        run_key=run_key,
        run_config=scan_run_config(models, translator),
        tags={"recall/trigger": trigger, "recall/models": ",".join(models)},
    )


def assertion_results(graph: MetadataGraph) -> list[AssertionResult]:
    """Every assertion's newest result in the graph, leaving out the assertions Recall writes itself."""
    urns = graph.list_urns("assertion")
    infos = graph.get_aspects(urns, [AssertionInfoClass]) if urns else {}
    theirs = [u for u in urns if not recall_assertion(infos.get(u, {}))]
    latest = graph.timeseries(theirs, AssertionRunEventClass, limit=1)
    results = []
    for urn in theirs:
        info = infos.get(urn, {}).get(AssertionInfoClass.ASPECT_NAME)
        newest = latest[urn]
        if not newest:
            continue
        event = newest[0]
        result = cast(str, event.result.type) if event.result else None  # the SDK's enum values are strings
        entity = asserted_entity(info) if isinstance(info, AssertionInfoClass) else None
        results.append(AssertionResult(urn, entity or event.asserteeUrn, event.timestampMillis, result))
    return results


def _handled_failures(cursor: str, results: Iterable[AssertionResult], failing: Iterable[str]) -> dict[str, int]:
    """The failing results a cursor holds handled; a sensor of an older Recall kept a time, up to which every
    failing result was handled."""
    kept = json.loads(cursor)
    if isinstance(kept, int):
        bad = set(failing)
        return {r.assertion: r.at_ms for r in results if r.result in bad and r.at_ms <= kept}
    return {str(urn): int(at) for urn, at in kept["failing"].items()}


def datahub_assertion_sensor(job: Job, interval_s: int = 60, default_status: DefaultSensorStatus = STOPPED,
                             translator: RecallTranslator | None = None) -> SensorDefinition:
    """Rescan the production models downstream of every assertion that newly failed in DataHub.

    The cursor holds each assertion whose newest result fails, with that result's stamp
    (:func:`~recall_dagster.reactions.unhandled_failures`): a result at the very millisecond of one handled,
    or late with an older stamp, launches its rescan all the same, and once. The first tick only records
    where the graph stands: failures older than the sensor are the nightly scan's.
    """

    names = translator or RecallTranslator()

    @sensor(name=names.sensor_name("datahub_assertion_results"), job=job, minimum_interval_seconds=interval_s,
            default_status=default_status,
            description="Rescans the production models downstream of each assertion that newly fails in DataHub.")
    def datahub_assertion_results(context: SensorEvaluationContext, recall: RecallResource) -> SensorResult:
        outcomes = recall.configuration().lifecycle.failing_outcomes
        with recall.open_graph() as graph:
            results = assertion_results(graph)
            handled = _handled_failures(context.cursor, results, outcomes) if context.cursor is not None else None
            failed, failing_now = unhandled_failures(results, handled or {}, outcomes)
            cursor = json.dumps({"failing": failing_now}, sort_keys=True)
            if handled is None:
                return SensorResult(skip_reason=f"watching {len(results)} assertion(s) from now on", cursor=cursor)
            if not failed:
                return SensorResult(skip_reason="no new failing assertion result", cursor=cursor)
            models = models_reading(_closures(recall, graph), [r.dataset for r in failed if r.dataset])
        if not models:
            return SensorResult(skip_reason=f"{len(failed)} new failure(s), none upstream of a production model",
                                cursor=cursor)
        # named by the results it handles: a tick evaluated again (its cursor lost) launches no second rescan
        seen = hashlib.sha256("\n".join(f"{r.assertion}@{r.at_ms}" for r in failed).encode()).hexdigest()[:16]
        return SensorResult(run_requests=[_rescan(f"datahub-assertions-{seen}", models, "datahub_assertion", names)],
                            cursor=cursor)

    return datahub_assertion_results


def _handled_versions(cursor: str, registered: Iterable[Registration]) -> dict[str, int]:
    """Each registered model's highest version a cursor holds handled; a sensor of an older Recall kept a time,
    up to which every version was handled."""
    kept = json.loads(cursor)
    if isinstance(kept, int):
        return highest_versions(r for r in registered if r.at_ms <= kept)
    return {str(name): int(version) for name, version in kept["versions"].items()}


def _versions_cursor(handled: dict[str, int]) -> str:
    return json.dumps({"versions": handled}, sort_keys=True)


def mlflow_sensor(job: Job, models: Sequence[str] = (), interval_s: int = 60,
                  default_status: DefaultSensorStatus = STOPPED,
                  translator: RecallTranslator | None = None) -> SensorDefinition:
    """Scan the versions registered in MLflow since the last tick, once DataHub holds them: one rescan per
    tick, however many arrived.

    ``models`` narrows the watch to some registered models; empty watches the
    whole registry. The cursor holds each registered model's highest version
    handled (:func:`~recall_dagster.reactions.unhandled_versions`), so a version
    stamped at the cursor's millisecond or earlier is still scanned, once. A
    version DataHub has not ingested yet holds back its model's later versions,
    so they are scanned on a later tick rather than skipped.
    """
    watched, names = frozenset(models), translator or RecallTranslator()

    @sensor(name=names.sensor_name("mlflow_new_versions"), job=job, minimum_interval_seconds=interval_s,
            default_status=default_status,
            description="Scans each model version registered in MLflow, once DataHub holds it.")
    def mlflow_new_versions(context: SensorEvaluationContext, recall: RecallResource) -> SensorResult:
        client = recall.mlflow_client()
        try:
            listed = client.search_model_versions()
        except Exception as err:
            if failing(err):  # the tick fails and keeps its cursor: the next tick sees the same versions
                raise unreachable(client.tracking_uri, "listing model versions for the mlflow_new_versions sensor",
                                  err) from None
            raise
        registered = [Registration(v.name, int(v.version), v.creation_timestamp)
                      for v in listed if not watched or v.name in watched]
        if context.cursor is None:
            return SensorResult(skip_reason=f"watching from now on ({len(registered)} version(s) exist)",
                                cursor=_versions_cursor(highest_versions(registered)))
        handled = _handled_versions(context.cursor, registered)
        new = unhandled_versions(registered, handled)
        if not new:
            return SensorResult(skip_reason="no new model version", cursor=_versions_cursor(handled))
        with recall.open_graph() as graph:
            known = _closures(recall, graph, include_all=True)
        ready = []
        waiting: dict[str, str] = {}  # name -> the selector of its first new version not in the graph yet
        for v in new:
            if v.name not in waiting and select(known, versions=[v.selector]):
                ready.append(v)
            else:
                waiting.setdefault(v.name, v.selector)
        cursor = _versions_cursor({**handled, **highest_versions(ready)})
        held = f"waiting for DataHub to ingest {', '.join(waiting.values())}" if waiting else None
        if not ready:
            return SensorResult(cursor=cursor, skip_reason=held)
        # a burst of registrations (a retrain of every model, a backfill) is one rescan of them all, not one each
        request = _rescan("mlflow-" + "+".join(f"{v.name}-{v.version}" for v in ready), [v.selector for v in ready],
                          "mlflow_new_version", names)
        return SensorResult(run_requests=[request], cursor=cursor)

    return mlflow_new_versions


def dbt_test_failure_sensor(
    dbt: AssetsDefinition, job: Job, translator: RecallTranslator | None = None, interval_s: int = 60,
    default_status: DefaultSensorStatus = STOPPED, on_pass: bool = False,
) -> SensorDefinition:
    """Rescan the production models downstream of a dbt test of ``dbt`` that just failed in Dagster; with
    ``on_pass`` (the rescan ingests dbt's artifacts first), of every test that just ran, so a test passing again
    resolves its incident.

    The cursor holds, per test, the last execution handled, so each evaluation
    is seen once, however runs interleave, on any event log storage. The failed
    tables reach models through the graph: ``translator`` names each dbt asset's
    table as the graph knows it.
    """
    names = translator or RecallTranslator()
    dbt_checks = sorted(dbt.check_keys, key=lambda key: key.to_user_string())

    @sensor(name=names.sensor_name("dbt_test_failures"), job=job, minimum_interval_seconds=interval_s,
            default_status=default_status,
            description="Rescans the production models downstream of a dbt test that just "
                        f"{'ran' if on_pass else 'failed'} in Dagster.")
    def dbt_test_failures(context: SensorEvaluationContext, recall: RecallResource) -> SensorResult:
        handled: dict[str, int] = json.loads(context.cursor) if context.cursor else {}
        latest = latest_check_executions(context.instance, dbt_checks)
        new = {  # completed executions not handled yet; a planned one has no evaluation until it runs
            key: (record.id, evaluation)
            for key, record in latest.items()
            if record.event is not None
            and (evaluation := record.event.asset_check_evaluation) is not None
            and handled.get(key.to_user_string()) != record.id
        }
        if not new:
            return SensorResult(skip_reason="no new dbt test results")
        handled.update({key.to_user_string(): rid for key, (rid, _) in new.items()})
        cursor = json.dumps(handled, sort_keys=True)
        tables = sorted({names.dataset_name(key.asset_key) for key, (_, evaluation) in new.items()
                         if on_pass or not evaluation.passed})
        if not tables:
            return SensorResult(skip_reason=f"{len(new)} new dbt test result(s), none failed", cursor=cursor)
        with recall.open_graph() as graph:
            models = models_reading(_closures(recall, graph), tables)
        if not models:
            return SensorResult(skip_reason=f"{len(tables)} {'tested' if on_pass else 'failed'} table(s), none "
                                            "upstream of a production model",
                                cursor=cursor)
        run_key = f"dbt-tests-{max(rid for rid, _ in new.values())}"
        return SensorResult(run_requests=[_rescan(run_key, models, "dbt_test_failure", names)], cursor=cursor)

    return dbt_test_failures
