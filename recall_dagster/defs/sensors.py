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


import json
from typing import Sequence

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
from recall_dagster.registry import failing, unreachable
from recall_dagster.graph.port import MetadataGraph
from recall_dagster.clock import clock_ms
from recall_dagster.reactions import AssertionResult, models_reading, new_failures

STOPPED = DefaultSensorStatus.STOPPED  # merged into a team's location, nothing starts until the team turns it on
Job = JobDefinition | UnresolvedAssetJobDefinition


def _closures(recall: RecallResource, graph: MetadataGraph, include_all: bool = False) -> list[ModelClosure]:
    return resolve_closures(
        graph, recall.configuration().scan.resolve, scanned_at_ms=clock_ms(), include_all=include_all
    )


def _rescan(run_key: str, models: Sequence[str], trigger: str) -> RunRequest:
    return RunRequest(
        run_key=run_key,
        run_config=scan_run_config(models=models),
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
        result = event.result.type if event.result else None  # type: ignore[attr-defined]
        entity = asserted_entity(info) if isinstance(info, AssertionInfoClass) else None
        results.append(AssertionResult(urn, entity or event.asserteeUrn, event.timestampMillis, result))  # type: ignore[attr-defined]
    return results


def datahub_assertion_sensor(job: Job, interval_s: int = 60, default_status: DefaultSensorStatus = STOPPED
                             ) -> SensorDefinition:
    """Rescan the production models downstream of every assertion that newly failed in DataHub.

    The cursor is the newest result time handled. The first tick only records
    where the graph stands: results older than the sensor are the nightly scan's.
    """

    @sensor(name="datahub_assertion_results", job=job, minimum_interval_seconds=interval_s, default_status=default_status)
    def datahub_assertion_results(context: SensorEvaluationContext, recall: RecallResource) -> SensorResult:
        with recall.open_graph() as graph:
            results = assertion_results(graph)
            newest = max((r.at_ms for r in results), default=0)
            if context.cursor is None:
                return SensorResult(skip_reason=f"watching {len(results)} assertion(s) from now on", cursor=str(newest))
            after = int(context.cursor)
            failed = new_failures(results, after, recall.configuration().lifecycle.failing_results)
            cursor = str(max(newest, after))
            if not failed:
                return SensorResult(skip_reason="no new failing assertion result", cursor=cursor)
            models = models_reading(_closures(recall, graph), [r.dataset for r in failed if r.dataset])
        if not models:
            return SensorResult(skip_reason=f"{len(failed)} new failure(s), none upstream of a production model",
                                cursor=cursor)
        return SensorResult(run_requests=[_rescan(f"datahub-assertions-{cursor}", models, "datahub_assertion")],
                            cursor=cursor)

    return datahub_assertion_results


def mlflow_sensor(job: Job, models: Sequence[str] = (), interval_s: int = 60,
                  default_status: DefaultSensorStatus = STOPPED) -> SensorDefinition:
    """Scan the versions registered in MLflow since the last tick, once DataHub holds them: one rescan per
    tick, however many arrived.

    ``models`` narrows the watch to some registered models; empty watches the
    whole registry. A version DataHub has not ingested yet holds the cursor
    back, so it (and what came after it) is scanned on a later tick rather than skipped.
    """
    watched = frozenset(models)

    @sensor(name="mlflow_new_versions", job=job, minimum_interval_seconds=interval_s, default_status=default_status)
    def mlflow_new_versions(context: SensorEvaluationContext, recall: RecallResource) -> SensorResult:
        client = recall.mlflow_client()
        try:
            registered = client.search_model_versions()
        except Exception as err:
            if failing(err):  # the tick fails and keeps its cursor: the next tick sees the same versions
                raise unreachable(client.tracking_uri, "listing model versions for the mlflow_new_versions sensor",
                                  err) from None
            raise
        versions = [v for v in registered if not watched or v.name in watched]
        newest = max((v.creation_timestamp for v in versions), default=0)
        if context.cursor is None:
            return SensorResult(skip_reason=f"watching from now on ({len(versions)} version(s) exist)",
                                cursor=str(newest))
        after = int(context.cursor)
        new = sorted((v for v in versions if v.creation_timestamp > after), key=lambda v: v.creation_timestamp)
        if not new:
            return SensorResult(skip_reason="no new model version")
        with recall.open_graph() as graph:
            known = _closures(recall, graph, include_all=True)
        ready, cursor, waiting = [], after, None
        for v in new:
            selector = f"{v.name}/{v.version}"
            if not select(known, versions=[selector]):
                waiting = f"waiting for DataHub to ingest {selector}"
                break
            ready.append(v)
            cursor = v.creation_timestamp
        if not ready:
            return SensorResult(cursor=str(cursor), skip_reason=waiting)
        # a burst of registrations (a retrain of every model, a backfill) is one rescan of them all, not one each
        selectors = [f"{v.name}/{v.version}" for v in ready]
        request = _rescan("mlflow-" + "+".join(f"{v.name}-{v.version}" for v in ready), selectors, "mlflow_new_version")
        return SensorResult(run_requests=[request], cursor=str(cursor))

    return mlflow_new_versions


def dbt_test_failure_sensor(
    dbt: AssetsDefinition, job: Job, translator: RecallTranslator | None = None, interval_s: int = 60,
    default_status: DefaultSensorStatus = STOPPED,
) -> SensorDefinition:
    """Rescan the production models downstream of a dbt test of ``dbt`` that just failed in Dagster.

    The cursor holds, per test, the last execution handled, so each evaluation
    is seen once, however runs interleave, on any event log storage. The failed
    tables reach models through the graph: ``translator`` names each dbt asset's
    table as the graph knows it.
    """
    names = translator or RecallTranslator()
    dbt_checks = sorted(dbt.check_keys, key=lambda key: key.to_user_string())

    @sensor(name="dbt_test_failures", job=job, minimum_interval_seconds=interval_s, default_status=default_status)
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
        failed = sorted({names.dataset_name(key.asset_key) for key, (_, evaluation) in new.items()
                         if not evaluation.passed})
        if not failed:
            return SensorResult(skip_reason=f"{len(new)} new dbt test result(s), none failed", cursor=cursor)
        with recall.open_graph() as graph:
            models = models_reading(_closures(recall, graph), failed)
        if not models:
            return SensorResult(skip_reason=f"{len(failed)} failed table(s), none upstream of a production model",
                                cursor=cursor)
        run_key = f"dbt-tests-{max(rid for rid, _ in new.values())}"
        return SensorResult(run_requests=[_rescan(run_key, models, "dbt_test_failure")], cursor=cursor)

    return dbt_test_failures
