"""The reactions: a failed dbt test and a new model version each launch a scan of the models they touch.

A failed asset check does not always fail its run (a warn-severity test never
does) and a failed run does not say which test failed, so the dbt sensor reads
the dbt tests' latest check executions from the instance instead of watching
runs. The MLflow sensor polls the registry, with the newest version creation
time it has seen as its cursor.
"""

import json
from typing import Mapping

from dagster import (
    AssetKey,
    AssetsDefinition,
    DefaultSensorStatus,
    RunRequest,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    sensor,
)

from ml_models.registry import load_registry
from recall_dagster.defs.automation import rescan_job
from recall_dagster.defs.resources import RecallResource
from recall_dagster.defs.scan import scan_run_config
from recall_dagster.reactions import affected_models
from recall_dagster.ingest.enrich import model_version_urn

INTERVAL_S = 60
RUNNING = DefaultSensorStatus.RUNNING  # reactions are on from the first `dagster dev`; the UI can stop them


def dbt_test_failure_sensor(dbt: AssetsDefinition, models: Mapping[AssetKey, str]) -> SensorDefinition:
    """Scan the production versions of every model downstream of a dbt test that just failed.

    The cursor holds, per dbt test, the last execution already handled, so each
    evaluation is seen once, however runs interleave, on any event log storage.
    ``models`` maps each training asset to its registered model name; which of
    them a failed test touches is read from Dagster's own asset graph.
    """
    dbt_checks = sorted(dbt.check_keys, key=lambda key: key.to_user_string())

    @sensor(name="dbt_test_failures", job=rescan_job, minimum_interval_seconds=INTERVAL_S, default_status=RUNNING)
    def dbt_test_failures(context: SensorEvaluationContext) -> SensorResult:
        handled: dict[str, int] = json.loads(context.cursor) if context.cursor else {}
        latest = context.instance.event_log_storage.get_latest_asset_check_execution_by_key(dbt_checks)
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
        failed = {key.asset_key for key, (_, evaluation) in new.items() if not evaluation.passed}
        graph = context.repository_def.asset_graph
        names = affected_models(failed, {name: graph.get_ancestor_asset_keys(key) for key, name in models.items()})
        if not names:
            reason = f"{len(new)} new dbt test result(s), no failure upstream of a model"
            return SensorResult(skip_reason=reason, cursor=cursor)
        return SensorResult(
            run_requests=[
                RunRequest(
                    run_key=f"dbt-tests-{max(rid for rid, _ in new.values())}",
                    run_config=scan_run_config(models=list(names)),
                    tags={"recall/trigger": "dbt_test_failure", "recall/models": ",".join(names)},
                )
            ],
            cursor=cursor,
        )

    return dbt_test_failures


@sensor(name="mlflow_new_versions", job=rescan_job, minimum_interval_seconds=INTERVAL_S, default_status=RUNNING)
def mlflow_new_versions(context: SensorEvaluationContext, recall: RecallResource) -> SensorResult:
    """Re-ingest MLflow's metadata and scan each model version registered since the last tick.

    The first tick only records where the registry stands: versions that
    existed before the sensor was switched on are not news.
    """
    versions = recall.mlflow_client().search_model_versions()
    newest = max((v.creation_timestamp for v in versions), default=0)
    if context.cursor is None:
        return SensorResult(skip_reason=f"watching from now on ({len(versions)} version(s) exist)", cursor=str(newest))
    after = int(context.cursor)
    new = sorted((v for v in versions if v.creation_timestamp > after), key=lambda v: v.creation_timestamp)
    if not new:
        return SensorResult(skip_reason="no new model version")
    registry = load_registry()
    return SensorResult(
        run_requests=[
            RunRequest(
                run_key=f"mlflow-{v.name}-{v.version}",
                run_config=scan_run_config(model_urns=[model_version_urn(registry, v.name, int(v.version))]),
                tags={"recall/trigger": "mlflow_new_version", "recall/models": f"{v.name}/{v.version}"},
            )
            for v in new
        ],
        cursor=str(newest),
    )
