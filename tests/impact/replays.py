"""A model registry whose versions replay a logged training query: what the read-only tests of
:mod:`recall_dagster.read_only_sql` drive, on the warehouses a team environment has and on the demo's."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest
from mlflow import MlflowClient
from sklearn.linear_model import LogisticRegression

from recall_dagster.estate.closure import ModelClosure
from recall_dagster.estate.views import Model
from recall_dagster.impact.models import MlflowModels, ModelUnavailable, Subject
from tests.configured import configured

ROWS = pd.DataFrame({"x": [0.1, 0.4, 0.6, 0.9, 0.2, 0.8], "label": [0, 0, 1, 1, 0, 1],
                     "note": ["a;b", "c", "a;b", "d", "e", "f"]})


@dataclass
class Registry:
    """A local MLflow tracking store and model registry, with a model any replay can load."""

    uri: str
    client: MlflowClient
    model_dir: Path

    def replay(self, warehouse_url: str, sql: str) -> tuple[Subject | ModelUnavailable, str]:
        """What ``recall impact`` gets for a model version whose run logged ``sql`` and no held-out rows, with
        the warehouse at ``warehouse_url``; and the run's id."""
        experiment = self.client.create_experiment(f"replay-{time.monotonic_ns()}")
        run_id = self.client.create_run(experiment).info.run_id
        self.client.log_text(run_id, sql, "training_query.sql")
        self.client.log_artifacts(run_id, str(self.model_dir), "model")
        name = f"guarded_{time.monotonic_ns()}"
        self.client.create_registered_model(name)
        version = self.client.create_model_version(name, f"{self.client.get_run(run_id).info.artifact_uri}/model",
                                                   run_id=run_id).version
        overlay = {"evaluation": {"artifact": "evaluation/never_logged.parquet",
                                  "query": {"connection": warehouse_url}}}
        closure = ModelClosure(
            model=Model(urn=f"urn:li:mlModel:(urn:li:dataPlatform:mlflow,{name}_{version},PROD)",
                        name=f"{name}_{version}", version=str(version),
                        groups=(f"urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,{name},PROD)",)),
            production=True,
        )
        try:
            loaded = configured({"impact": overlay})
            return MlflowModels(self.uri, loaded.impact, loaded.warehouse).load(closure), run_id
        except ModelUnavailable as err:
            return err, run_id


def made_registry(tmp_path_factory: pytest.TempPathFactory) -> Registry:
    """A fresh store with a logistic regression saved beside it, for a module's fixture."""
    import mlflow.sklearn

    root = tmp_path_factory.mktemp("mlflow")
    model_dir = root / "model"
    # cloudpickle, not MLflow 3's default skops: skops looks up names in every module loaded, and DataHub's
    # datahub.sdk (which another test of the process may have imported) answers an unknown name with KeyError.
    mlflow.sklearn.save_model(LogisticRegression().fit(ROWS[["x"]], ROWS["label"]), str(model_dir),
                              serialization_format="cloudpickle")
    uri = f"sqlite:///{root / 'mlflow.db'}"
    return Registry(uri, MlflowClient(tracking_uri=uri, registry_uri=uri), model_dir)
