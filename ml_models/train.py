"""Train one registry model on features read through Feast, and record it in MLflow.

The record is what the rest of Recall needs to connect a model version to the
data it was trained on: the feature references it asked Feast for, which
warehouse tables stood behind them and how many rows they held, when the run
started and ended, and the MLflow ids DataHub derives URNs from. The run also
keeps ``training_query.sql``, the warehouse query that returns its rows before
the feature store types them, for readers without Feast (``recall impact``
reruns it when a run logged no evaluation rows).
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable, Mapping

import pandas as pd
from mlflow import MlflowClient
from mlflow.entities import DatasetInput, Metric, Param, RunStatus

from ml_models.feature_store import FEATURE_REFS, feature_ref
from ml_models.fit import fit_and_evaluate, prepare
from ml_models.historical import training_rows
from ml_models.query import TrainingQuery, build_training_query, count_query
from ml_models.registry import FeatureRegistry, ModelSpec, WarehouseTable
from ml_models.transforms import TRANSFORMS
from ml_models.tracking import ensure_experiment, log_evaluation, log_sklearn_model, register_version, table_input

ReadSql = Callable[[str], pd.DataFrame]
TRANSFORM_TAG = "recall.transform."  # recall.yaml diagnose.transform_tag_prefix


@dataclass(frozen=True)
class TrainingRecord:
    model: str
    registered_name: str
    version: int
    alias: str
    run_id: str
    experiment_id: str
    start_ms: int
    end_ms: int
    metrics: Mapping[str, float]
    input_tables: tuple[str, ...]  # schema.table, label table first
    input_row_counts: Mapping[str, int]  # schema.table → rows in the whole table when read


def train_model(
    model: ModelSpec,
    registry: FeatureRegistry,
    read_sql: ReadSql,
    tracking_uri: str,
    now_ms: int | None = None,
    promote: bool = True,
    tags: Mapping[str, str] | None = None,
) -> TrainingRecord:
    """Read, fit, log and register one model; with ``promote`` the alias moves to the new version.

    ``now_ms`` places the run's start on a caller-chosen clock (its end is start
    plus the real duration), so a scenario can put a retrain at a given moment.
    ``tags`` go on the run beside Recall's own: the orchestrator's, such as the
    Dagster run that trained it. A failure inside the run marks it FAILED and re-raises.
    """
    client = MlflowClient(tracking_uri=tracking_uri, registry_uri=tracking_uri)
    experiment_id = ensure_experiment(client, model.registered_name, tracking_uri)
    query = build_training_query(model, registry)
    inputs = tuple(read.table.qualified_name for read in query.reads)
    run = client.create_run(
        experiment_id,
        start_time=now_ms,
        run_name=f"train-{model.name}",
        tags={**_run_tags(model, inputs), **(tags or {})},
    )
    run_id = run.info.run_id
    started = time.monotonic()
    try:
        client.log_text(run_id, query.sql, "training_query.sql")
        client.log_batch(run_id, params=_params(model))
        rows = training_rows(model, registry, read_sql, _instant(now_ms))
        row_counts = {name: _count(read_sql, read.table) for name, read in zip(inputs, query.reads)}
        client.log_inputs(run_id, _inputs(rows.read, query, model, registry, row_counts))
        fitted = fit_and_evaluate(prepare(rows.served, model), model)
        metrics = {**fitted.metrics, **{f"table_rows.{name}": float(n) for name, n in row_counts.items()}}
        stamp = now_ms if now_ms is not None else int(time.time() * 1000)
        client.log_batch(run_id, metrics=[Metric(k, v, stamp, 0) for k, v in metrics.items()])
        source = log_sklearn_model(client, run_id, fitted.pipeline, fitted.train_features.head(5))
        log_evaluation(client, run_id, fitted.test_features, fitted.test_label)
    except BaseException:
        with _links_aside():
            client.set_terminated(run_id, RunStatus.to_string(RunStatus.FAILED))
        raise
    end_ms = now_ms + int((time.monotonic() - started) * 1000) if now_ms is not None else None
    with _links_aside():
        client.set_terminated(run_id, RunStatus.to_string(RunStatus.FINISHED), end_time=end_ms)
    version = register_version(
        client,
        model,
        run_id,
        source,
        tags={"feature_tables": ",".join(model.feature_tables), "inputs": ",".join(inputs)},
        promote=promote,
    )
    info = client.get_run(run_id).info
    return TrainingRecord(
        model=model.name,
        registered_name=model.registered_name,
        version=int(version.version),
        alias=model.alias if promote else "",
        run_id=run_id,
        experiment_id=experiment_id,
        start_ms=info.start_time,
        end_ms=info.end_time,
        metrics=metrics,
        input_tables=inputs,
        input_row_counts=row_counts,
    )


def evaluate_model(
    model: ModelSpec, registry: FeatureRegistry, read_sql: ReadSql, before: datetime | None = None
) -> dict[str, float]:
    """Fit and score exactly as :func:`train_model` does, recording nothing: what a repair is proven with.
    ``before``: only rows loaded before that instant (a retrain on the window before a failure)."""
    rows = training_rows(model, registry, read_sql, _instant(None), before)
    return fit_and_evaluate(prepare(rows.served, model), model).metrics


def _links_aside() -> contextlib.AbstractContextManager:
    """MLflow prints a run's links to stdout when a tracking server ends it; they go to stderr, so a caller's own
    output (``--json``) stays clean."""
    return contextlib.redirect_stdout(sys.stderr)


def _instant(now_ms: int | None) -> datetime:
    """The run's clock as a datetime: what a snapshot view is stamped with when training stages it."""
    return datetime.fromtimestamp(now_ms / 1000, timezone.utc) if now_ms is not None else datetime.now(timezone.utc)


def _count(read_sql: ReadSql, table: WarehouseTable) -> int:
    return int(read_sql(count_query(table)).iloc[0, 0])


def _run_tags(model: ModelSpec, inputs: tuple[str, ...]) -> dict[str, str]:
    """Let MLflow searches find runs by model and input table, and say which code computed each feature.

    ``recall.transform.<feature>`` = ``<module>:<function>@<hash of its source>``
    is what ``recall diagnose`` compares between two runs to see a feature's
    code change. DataHub 1.7's MLflow source does not carry run tags over (it
    reads a ``run.tags`` attribute runs do not have), so Recall reads them from MLflow.
    """
    tags = {
        "recall.model": model.name,
        "recall.feature_tables": ",".join(model.feature_tables),
        "recall.inputs": ",".join(inputs),
    }
    for feature in model.features:
        if feature.transform is not None:
            code = TRANSFORMS[feature.transform]
            digest = hashlib.sha256(inspect.getsource(code).encode()).hexdigest()[:12]
            tags[f"{TRANSFORM_TAG}{feature.name}"] = f"{code.__module__}:{code.__name__}@{digest}"
    return tags


def _params(model: ModelSpec) -> list[Param]:
    spec = model.training
    params = {
        "estimator": model.estimator_class,
        **{f"estimator.{k}": v for k, v in model.estimator_params.items()},
        "features": ",".join(f.name for f in model.features),
        # What the model consumes, as the feature store names it: DataHub's model → feature links come from here.
        FEATURE_REFS: ",".join(feature_ref(f.feature_table, f.name) for f in model.features),
        "label": f"{model.label.model}.{model.label.column}",
        "test_fraction": spec.test_fraction,
        "random_state": spec.random_state,
        "max_rows": spec.max_rows,
        "split_by": spec.split_by or "random",
    }
    return [Param(k, str(v)) for k, v in params.items()]


def _inputs(
    frame: pd.DataFrame,
    query: TrainingQuery,
    model: ModelSpec,
    registry: FeatureRegistry,
    row_counts: Mapping[str, int],
) -> list[DatasetInput]:
    """One dataset input per table, holding the columns training read from it under their own names."""
    inputs = []
    for read in query.reads:
        columns = frame[list(read.columns)].rename(columns=dict(read.columns))
        targets = model.label.column if read.table.name == model.label.model else None
        inputs.append(
            table_input(
                columns,
                platform=registry.warehouse_platform,
                name=registry.warehouse_name(read.table),
                targets=targets,
                tags={"table_rows": str(row_counts[read.table.qualified_name])},
            )
        )
    return inputs
