"""MLflow writes shaped for what DataHub's MLflow source reads back.

DataHub turns each registered model into an mlModelGroup (registered-model tags
as custom properties), each version into an mlModel ``<name>_<version>``
(version tags as custom properties, ``current_stage`` as an ``mlflow_<stage>``
tag, the run as its training job) and each run into a dataProcessInstance with
params, metrics and inputEdges from the run's dataset inputs.
A dataset input whose source type is a DataHub platform (``postgres``) gets an
upstream edge to ``urn:li:dataset:(urn:li:dataPlatform:postgres,<name>,PROD)``,
so inputs are logged with the product's :func:`~recall_dagster.mlflow_inputs.warehouse_dataset`
and named exactly as DataHub names the warehouse table.

The alias is set as any MLflow user sets it, and nothing more: MLflow 2.20's
SQL store leaves ``aliases`` empty on ``search_model_versions``, the call
DataHub uses, so versionProperties.aliases arrives empty, and Recall reads the
aliases from the registry itself (:mod:`recall_dagster.graph.registry_overlay`).

Only MlflowClient calls are used (no fluent ``mlflow.start_run``): the tracking
URI is an argument, never process-global state, and the run's start time can be
set by the caller. Where a Dagster resource does set that state,
:func:`mlflow_process_state` puts it back.
"""

from __future__ import annotations

import os
import tempfile
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Mapping

import mlflow
import mlflow.sklearn
import pandas as pd
from mlflow import MlflowClient
from mlflow.entities import Dataset, DatasetInput, InputTag
from mlflow.entities.model_registry import ModelVersion
from mlflow.exceptions import MlflowException
from mlflow.models import infer_signature
from mlflow.protos.databricks_pb2 import RESOURCE_ALREADY_EXISTS, ErrorCode
from mlflow.utils.mlflow_tags import MLFLOW_DATASET_CONTEXT
from sqlalchemy.engine import make_url

from ml_models.registry import ModelSpec
from recall_dagster.mlflow_inputs import warehouse_dataset

MODEL_ARTIFACT_PATH = "model"
# Where impact tests look for the held-out rows (recall.yaml impact.evaluation: artifact, label_column).
EVALUATION_ARTIFACT = "evaluation/holdout.parquet"
EVALUATION_LABEL = "label"


def artifact_location(tracking_uri: str, experiment: str) -> str | None:
    """Next to a SQLite tracking DB; for a server, None lets the server decide.

    Without this, MLflow puts a SQLite-backed experiment's artifacts under
    ``./mlruns`` of whatever directory the process happens to run in.
    """
    if not tracking_uri.startswith("sqlite:"):
        return None
    database = make_url(tracking_uri).database
    if not database or database == ":memory:":
        return None
    return (Path(database).resolve().parent / "artifacts" / experiment).as_uri()


def ensure_experiment(client: MlflowClient, name: str, tracking_uri: str) -> str:
    """One experiment per model; a deleted one is restored, since runs cannot be added to it."""
    experiment = client.get_experiment_by_name(name)
    if experiment is None:
        return client.create_experiment(name, artifact_location=artifact_location(tracking_uri, name))
    if experiment.lifecycle_stage == "deleted":
        client.restore_experiment(experiment.experiment_id)
    return experiment.experiment_id


def table_input(
    frame: pd.DataFrame,
    platform: str,
    name: str,
    targets: str | None,
    tags: Mapping[str, str],
) -> DatasetInput:
    """A training-context dataset input for the columns read from one table."""
    with warnings.catch_warnings():
        # Integer columns make MLflow hint about model-signature NULL handling,
        # which does not apply to an input's recorded schema.
        warnings.filterwarnings("ignore", message="Hint: Inferred schema contains integer", category=UserWarning)
        dataset = warehouse_dataset(frame, platform, name, targets)
        entity = Dataset(**dataset.to_dict())  # the schema is inferred here, lazily
    input_tags = [InputTag(key=k, value=v) for k, v in tags.items()]
    input_tags.append(InputTag(key=MLFLOW_DATASET_CONTEXT, value="training"))
    return DatasetInput(dataset=entity, tags=input_tags)


def log_sklearn_model(client: MlflowClient, run_id: str, pipeline: Any, example: pd.DataFrame) -> str:
    """Save the pipeline as an MLflow sklearn model in the run; returns its artifact URI.

    Requirements are pinned to the sklearn flavor's defaults instead of being
    inferred, because inference re-imports the model in a subprocess: seconds
    per training, for a list that would come out the same. The model is
    cloudpickled, as MLflow 2 saved it, not in skops' format, MLflow 3's
    default: skops finds a type's module by asking every imported module for
    it, and DataHub's SDK module answers an unknown name with a KeyError, which
    skops does not expect (the demo's processes import both).
    """
    signature = infer_signature(example, pipeline.predict(example))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / MODEL_ARTIFACT_PATH
        mlflow.sklearn.save_model(
            pipeline,
            path,
            signature=signature,
            pip_requirements=mlflow.sklearn.get_default_pip_requirements(),
            serialization_format=mlflow.sklearn.SERIALIZATION_FORMAT_CLOUDPICKLE,
        )
        client.log_artifacts(run_id, str(path), MODEL_ARTIFACT_PATH)
    return f"{client.get_run(run_id).info.artifact_uri}/{MODEL_ARTIFACT_PATH}"


def log_evaluation(client: MlflowClient, run_id: str, features: pd.DataFrame, label: pd.Series) -> None:
    """The held-out rows the run's metrics were scored on, inputs and label side by side.

    Recall's impact tests replay upstream changes on exactly these rows
    against the registered model, so the file holds the model's inputs under
    the names its signature gives them.
    """
    folder, _, name = EVALUATION_ARTIFACT.rpartition("/")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        features.assign(**{EVALUATION_LABEL: label.to_numpy()}).reset_index(drop=True).to_parquet(path, index=False)
        client.log_artifact(run_id, str(path), folder)


def register_version(
    client: MlflowClient,
    model: ModelSpec,
    run_id: str,
    source: str,
    tags: Mapping[str, str],
    promote: bool = True,
) -> ModelVersion:
    """Register a new version; with ``promote`` the model's alias moves to it (:func:`promote_version`)."""
    try:
        client.create_registered_model(model.registered_name, description=model.description)
    except MlflowException as err:
        if err.error_code != ErrorCode.Name(RESOURCE_ALREADY_EXISTS):
            raise
    version = client.create_model_version(
        model.registered_name,
        source=source,
        run_id=run_id,
        tags=dict(tags),
        description=model.description,
    )
    if promote:
        promote_version(client, model, version.version)
    return client.get_model_version(model.registered_name, version.version)


def promote_version(client: MlflowClient, model: ModelSpec, version: str | int) -> None:
    """Move the model's alias to ``version`` (the previous holder loses it, as MLflow moves an alias)."""
    client.set_registered_model_alias(model.registered_name, model.alias, str(version))


MLFLOW_PROCESS_ENV = ("MLFLOW_TRACKING_URI", "MLFLOW_EXPERIMENT_ID")


@contextmanager
def mlflow_process_state() -> Iterator[None]:
    """Put back the process's MLflow tracking URI and experiment after the run.

    dagster-mlflow's resource sets both for the whole process, and MLflow
    exports them as MLFLOW_TRACKING_URI and MLFLOW_EXPERIMENT_ID for
    subprocesses. The demo trains in its caller's process (``seed build``, a
    test), so without this a later ``Settings.from_env`` there would read
    this estate's tracking store, even after the estate is reset.
    """
    saved = {name: os.environ.get(name) for name in MLFLOW_PROCESS_ENV}
    try:
        yield
    finally:
        mlflow.set_tracking_uri(saved["MLFLOW_TRACKING_URI"])
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
