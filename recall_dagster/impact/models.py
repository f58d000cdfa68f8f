"""The model a production alias serves, and the rows its training run held out, loaded from MLflow.

This is the impact test's only edge to a model registry.  The version comes
from the graph (the closure DataHub's mlflow source wrote), the evaluation
rows from the artifact ``impact.evaluation.artifact`` of that version's run:
the rows the model was scored on when it was trained, with the label beside
its inputs.  Whatever stands in the way (no tracking store, no such version,
no artifact, a flavor that will not load) is a :class:`ModelUnavailable`
naming it, which the experiment turns into INCOMPLETE; a tracking server or
warehouse that does not answer, before or in the middle of a run, is a
:class:`~recall_dagster.errors.ServiceUnreachable` (exit 3) naming what was
being read (:mod:`recall_dagster.mlflow_registry` tells the two apart). A training
query the run logged is replayed only when it is one read statement, on a
connection that can only read (:mod:`recall_dagster.read_only_sql`).
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

import numpy as np
import pandas as pd

from recall_dagster.config.warehouse import Warehouse
from recall_dagster.errors import RecallError, ServiceUnreachable, reason
from recall_dagster.estate import ModelClosure
from recall_dagster.impact.config import ImpactConfig
from recall_dagster.impact.measure import Predictor, Task
from recall_dagster.read_only_sql import ReadTimedOut, database_error, sql_connection, why_not_a_read
from recall_dagster.mlflow_registry import failing, mlflow_client, sqlite_store, unreachable

if TYPE_CHECKING:
    from mlflow import MlflowClient


class ModelUnavailable(RecallError):
    """The model or its evaluation data cannot be had; the message says which and why."""


@dataclass(frozen=True)
class Subject:
    """One model version ready to measure: its predictor and its held-out rows."""

    registered_name: str
    version: str
    run_id: str
    predictor: Predictor
    inputs: pd.DataFrame  # evaluation rows, model inputs only
    labels: np.ndarray  # float; the positive class as 1.0 for classifiers, NaN where unknown


class ModelSource(Protocol):
    def load(self, closure: ModelClosure) -> Subject: ...


class _Estimator(Protocol):
    """A loaded model of any flavor: a scikit-learn estimator or a pyfunc model."""

    def predict(self, frame: pd.DataFrame) -> Any: ...


class _Classifier(_Estimator, Protocol):
    def predict_proba(self, frame: pd.DataFrame) -> np.ndarray: ...


class SklearnPredictor:
    """A scikit-learn estimator (the sklearn flavor): probabilities for binary classifiers, else predictions."""

    def __init__(self, estimator: _Estimator) -> None:
        self.estimator = estimator
        classes = getattr(estimator, "classes_", None)
        self.task: Task = "classification" if hasattr(estimator, "predict_proba") and classes is not None else "regression"
        self.classes = np.asarray(classes) if self.task == "classification" else None

    def predict(self, frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray | None]:
        if self.task == "classification":  # so it has predict_proba and classes (__init__)
            proba = cast(_Classifier, self.estimator).predict_proba(frame)
            return proba[:, 1], cast(np.ndarray, self.classes)[np.argmax(proba, axis=1)]
        return np.asarray(self.estimator.predict(frame)), None


class PyfuncPredictor:
    """Any other flavor through pyfunc: its output is the score; a 0/1 label makes it a classifier."""

    def __init__(self, model: _Estimator, task: Task) -> None:
        self.model, self.task = model, task

    def predict(self, frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray | None]:
        output = self.model.predict(frame)
        scores = np.asarray(output.iloc[:, -1] if isinstance(output, pd.DataFrame) else output, dtype="float64")
        return scores, (scores >= 0.5).astype(int) if self.task == "classification" else None


def _read_sql(url: str, sql: str, where: str, artifact: str, timeout_s: float) -> pd.DataFrame:
    """Run the training query ``artifact`` logged, if it is one read: whoever can log to the run wrote it, and
    it runs with Recall's credentials. A database that does not answer is a failing service, not a missing
    input."""
    import sqlalchemy

    refused = why_not_a_read(sql)
    if refused:
        raise ModelUnavailable(
            f"Recall refused to run {artifact} of {where} on the warehouse: {refused}; a training query is "
            "replayed only when it is one read statement (SELECT, WITH ... SELECT, VALUES or TABLE)"
        )
    try:
        with sql_connection(url, timeout_s) as conn:
            return pd.read_sql_query(sqlalchemy.text(sql), conn)
    except ReadTimedOut as err:
        raise ModelUnavailable(f"the training query of {where} {err}") from None
    except Exception as raised:  # pandas 3 wraps the driver's error in its own (read_only_sql.database_error)
        failed = database_error(raised) or raised
        if isinstance(failed, sqlalchemy.exc.OperationalError):
            raise ServiceUnreachable(
                f"the warehouse did not answer the training query of {where}: {reason(failed)}") from None
        if not isinstance(failed, sqlalchemy.exc.SQLAlchemyError):
            raise
        raise ModelUnavailable(f"the training query of {where} failed on the warehouse: {reason(failed)}") from None


def _read_table(path: Path) -> pd.DataFrame:
    if path.suffix == ".parquet":
        return pd.read_parquet(path)
    if path.suffix == ".csv":
        return pd.read_csv(path)
    raise ModelUnavailable(f"evaluation artifact {path.name} is neither .parquet nor .csv")


def _labels(raw: pd.Series, predictor: Predictor, where: str) -> np.ndarray:
    if predictor.task == "regression":
        return pd.to_numeric(raw, errors="coerce").to_numpy(dtype="float64")
    classes = getattr(predictor, "classes", None)
    if classes is None:
        positive: object = 1
    elif len(classes) != 2:
        raise ModelUnavailable(f"{where} predicts {len(classes)} classes; impact tests measure binary classifiers")
    else:
        positive = classes[1]
    if isinstance(positive, (int, float, np.integer, np.floating)):
        hits = pd.to_numeric(raw, errors="coerce") == float(positive)
    else:
        hits = raw.astype(str) == str(positive)
    return np.where(raw.notna().to_numpy(), hits.to_numpy(dtype="float64"), np.nan)


class MlflowModels:
    """Loads each closure's version once per experiment; a second ask returns the same subject or reason."""

    def __init__(self, tracking_uri: str, config: ImpactConfig, warehouse: Warehouse) -> None:
        self.tracking_uri, self.config, self.warehouse = tracking_uri, config, warehouse
        # MLflow draws a download bar per artifact on stderr, which would garble the report.
        os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
        self._cache: dict[str, Subject | ModelUnavailable] = {}

    def load(self, closure: ModelClosure) -> Subject:
        if closure.urn not in self._cache:
            try:
                self._cache[closure.urn] = self._load(closure)
            except ModelUnavailable as err:
                self._cache[closure.urn] = err
        found = self._cache[closure.urn]
        if isinstance(found, ModelUnavailable):
            raise found
        return found

    def client(self) -> MlflowClient:  # MlflowClient is imported lazily: the scan must not pay for MLflow
        store = sqlite_store(self.tracking_uri)
        if store is not None and not store.exists():
            raise ModelUnavailable(f"no MLflow tracking store at {store} (set MLFLOW_TRACKING_URI)")
        return mlflow_client(self.tracking_uri, self.config.registry)

    def _load(self, closure: ModelClosure) -> Subject:
        name, version = closure.registered_name, closure.model.version
        where = f"{name} version {version}"
        if closure.model.missing or not version:
            raise ModelUnavailable(f"the graph records no registry version for {closure.model.name}")
        client = self.client()
        from mlflow.exceptions import MlflowException

        try:
            mv = client.get_model_version(name, version)
            model_uri = client.get_model_version_download_uri(name, version)
        except (MlflowException, OSError) as err:
            if failing(err):
                raise unreachable(self.tracking_uri, f"reading {where}", err) from None
            raise ModelUnavailable(f"MLflow at {self.tracking_uri} has no {where}: {reason(err)}") from None
        if not mv.run_id:
            raise ModelUnavailable(f"{where} names no training run, so no evaluation rows")
        with tempfile.TemporaryDirectory(prefix="recall-impact-") as tmp:
            frame = self._evaluation(client, mv.run_id, Path(tmp), where)
            predictor = self._predictor(model_uri, frame, Path(tmp), where)
        label = self.config.evaluation.label_column
        labels = _labels(frame[label], predictor, where)
        return Subject(name, str(version), mv.run_id, predictor, frame.drop(columns=[label]), labels)

    def _evaluation(self, client: MlflowClient, run_id: str, tmp: Path, where: str) -> pd.DataFrame:
        """The held-out rows the run logged; without them, its training query rerun when one is configured."""
        artifact = self.config.evaluation.artifact
        try:
            local = self._download(client, run_id, artifact, tmp / "evaluation", where)
        except ModelUnavailable as missing:
            url, why = self.config.evaluation.query.url(os.environ, self.warehouse)
            if url is None:
                raise ModelUnavailable(
                    f"the training run {run_id} of {where} logged no evaluation data at {artifact} ({missing}); "
                    f"log the held-out rows there, set impact.evaluation.artifact, or impact.evaluation.query: {why}"
                ) from None
            return self._queried(client, run_id, tmp, where, url)
        try:
            frame = _read_table(local)
        except ModelUnavailable:
            raise
        except Exception as err:  # any reader failure means the artifact is unusable
            raise ModelUnavailable(f"evaluation data {artifact} of {where} cannot be read: {reason(err)}") from None
        label = self.config.evaluation.label_column
        if label not in frame.columns:
            raise ModelUnavailable(
                f"evaluation data {artifact} of {where} has no label column {label!r} "
                "(impact.evaluation.label_column)"
            )
        return frame

    def _download(self, client: MlflowClient, run_id: str, artifact: str, folder: Path, where: str) -> Path:
        from mlflow.exceptions import MlflowException

        folder.mkdir(exist_ok=True)
        try:
            # Listed first: an MLflow 2.20 server proxying artifacts answers a missing file with 500s, which its
            # client retries for minutes and which read as a server down; a listing answers what is there.
            listed = {item.path for item in client.list_artifacts(run_id, artifact.rpartition("/")[0] or None)}
            if artifact not in listed:
                raise ModelUnavailable(f"the run {run_id} logged no {artifact}")
            return Path(client.download_artifacts(run_id, artifact, str(folder)))
        except (MlflowException, OSError) as err:
            if isinstance(err, MlflowException) and failing(err):
                raise unreachable(self.tracking_uri, f"downloading {artifact} of {where}", err) from None
            raise ModelUnavailable(reason(err)) from None

    def _queried(self, client: MlflowClient, run_id: str, tmp: Path, where: str, url: str) -> pd.DataFrame:
        """The training query's rows, inputs renamed to the model's names and the label to ``label_column``."""
        evaluation = self.config.evaluation
        query = evaluation.query
        try:
            sql = self._download(client, run_id, query.artifact, tmp / "query", where).read_text()
        except ModelUnavailable as err:
            raise ModelUnavailable(
                f"the training run {run_id} of {where} logged neither evaluation rows at {evaluation.artifact} "
                f"nor a training query at {query.artifact} ({err})"
            ) from None
        frame = _read_sql(url, sql, where, f"the training query {query.artifact} of run {run_id}",
                          self.warehouse.read_timeout_seconds)
        labels = [c for c in frame.columns if str(c).startswith(query.label_prefix)]
        if len(labels) != 1:
            raise ModelUnavailable(
                f"the training query of {where} returns {len(labels)} columns starting with "
                f"{query.label_prefix!r} (impact.evaluation.query.label_prefix); one must hold the label"
            )
        prefix = query.input_prefix
        inputs = {c: str(c)[len(prefix):] for c in frame.columns if c != labels[0] and str(c).startswith(prefix)}
        frame = frame[[*inputs, labels[0]]].rename(columns={**inputs, labels[0]: evaluation.label_column})
        if len(frame) > query.max_rows:
            frame = frame.sample(n=query.max_rows, random_state=self.config.seed).sort_index()
        return frame.reset_index(drop=True)

    def _predictor(self, model_uri: str, frame: pd.DataFrame, tmp: Path, where: str) -> Predictor:
        try:
            import mlflow.artifacts
            from mlflow.models import Model

            (tmp / "model").mkdir()
            local = mlflow.artifacts.download_artifacts(
                artifact_uri=model_uri, dst_path=str(tmp / "model"), tracking_uri=self.tracking_uri
            )
            if "sklearn" in Model.load(local).flavors:
                import mlflow.sklearn

                return SklearnPredictor(mlflow.sklearn.load_model(local))
            import mlflow.pyfunc

            raw = frame[self.config.evaluation.label_column].dropna()
            task: Task = "classification" if set(pd.unique(raw)) <= {0, 1} else "regression"  # True == 1 too
            return PyfuncPredictor(mlflow.pyfunc.load_model(local), task)
        except Exception as err:  # a model that will not load is a reason, not a crash
            from mlflow.exceptions import MlflowException

            if isinstance(err, MlflowException) and failing(err):
                raise unreachable(self.tracking_uri, f"downloading the model of {where}", err) from None
            raise ModelUnavailable(f"{where} cannot be loaded from {model_uri}: {reason(err)}") from None
