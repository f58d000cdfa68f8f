"""Where Recall's state lives and which services it talks to, as Dagster resources.

Each resource is configured from the environment variable the CLI reads
(``RECALL_HOME``, ``RECALL_GRAPH``, ``RECALL_WAREHOUSE_URL``, ``MLFLOW_TRACKING_URI``...),
bound with :class:`~dagster.EnvVar` so the UI shows where a value came from and
a secret never appears in it. Pointing a deployment at production services is
a change of environment, never of code. An empty value means the embedded
stack's default under ``RECALL_HOME``, exactly as :meth:`Settings.from_env` decides.
"""

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from dagster import ConfigurableResource, EnvVar, InitResourceContext

from recall_dagster.graph import MetadataGraph, open_graph
from recall_dagster.config.load import Configuration, load
from recall_dagster.collector import host_starts, host_stops
from recall_dagster.home_scan import home_pipeline
from recall_dagster.impact.models import MlflowModels
from recall_dagster.scan import Pipeline
from recall_dagster.settings import Settings, lock_wait_seconds

if TYPE_CHECKING:
    from mlflow import MlflowClient


class RecallHome(ConfigurableResource):
    """``RECALL_HOME``: the warehouse's data, the graph file, dbt's target, state and evidence."""

    path: str
    config_path: str = ""  # RECALL_CONFIG: overrides laid over the shipped recall.yaml
    lock_wait_seconds: str = ""  # RECALL_LOCK_WAIT_SECONDS: how long a run waits for the home's lock (60 when empty)


class MetadataGraphResource(ConfigurableResource):
    """``RECALL_GRAPH``: a DataHub Lite file or a GMS URL (with ``DATAHUB_GMS_TOKEN``)."""

    target: str = ""
    token: str = ""


class WarehouseResource(ConfigurableResource):
    """``RECALL_WAREHOUSE_URL``: the team's Postgres; empty starts the embedded one on first use."""

    url: str = ""


class MlflowResource(ConfigurableResource):
    """``MLFLOW_TRACKING_URI``: the tracking server and model registry."""

    tracking_uri: str = ""


class RecallResource(ConfigurableResource):
    """The four above, resolved into the one :class:`Settings` every Recall function takes."""

    home: RecallHome
    graph: MetadataGraphResource
    warehouse: WarehouseResource
    mlflow: MlflowResource

    @classmethod
    def from_env(cls, config_path: str | None = None) -> "RecallResource":
        """Bind every field to its environment variable, leaving unset ones to the embedded defaults; a
        ``config_path`` given (a component's ``config_file``) stands for ``RECALL_CONFIG``."""
        config = _env("RECALL_CONFIG") if config_path is None else config_path
        return cls(
            home=RecallHome(path=_env("RECALL_HOME", str(Settings.from_env().home)), config_path=config,
                            lock_wait_seconds=_env("RECALL_LOCK_WAIT_SECONDS")),
            graph=MetadataGraphResource(target=_env("RECALL_GRAPH"), token=_env("DATAHUB_GMS_TOKEN")),
            warehouse=WarehouseResource(url=_env("RECALL_WAREHOUSE_URL")),
            mlflow=MlflowResource(tracking_uri=_env("MLFLOW_TRACKING_URI")),
        )

    @classmethod
    def from_settings(cls, settings: Settings, config_path: str = "") -> "RecallResource":
        """Fixed values, for tests and embedding: nothing is read from the environment."""
        return cls(
            home=RecallHome(path=str(settings.home), config_path=config_path,
                            lock_wait_seconds=str(settings.lock_wait_seconds)),
            graph=MetadataGraphResource(target=settings.graph, token=settings.gms_token or ""),
            warehouse=WarehouseResource(url=settings.warehouse_url or ""),
            mlflow=MlflowResource(tracking_uri=settings.mlflow_tracking_uri or ""),
        )

    def setup_for_execution(self, context: InitResourceContext) -> None:
        """A Dagster run's memory is Dagster's: Recall leaves its garbage collector alone while the run uses it."""
        host_starts()

    def teardown_after_execution(self, context: InitResourceContext) -> None:
        host_stops()

    def config_file(self) -> str | None:
        """``RECALL_CONFIG`` as configured, at run time and while definitions load (before Dagster resolves an EnvVar)."""
        value = self.home.config_path
        return (value.get_value() if isinstance(value, EnvVar) else value) or None

    def settings(self) -> Settings:
        home = Path(self.home.path).expanduser().resolve()
        return Settings(
            home=home,
            graph=self.graph.target or str(home / "datahub.db"),
            gms_token=self.graph.token or None,
            warehouse_url=self.warehouse.url or None,
            mlflow_tracking_uri=self.mlflow.tracking_uri or None,
            lock_wait_seconds=lock_wait_seconds(self.home.lock_wait_seconds),
        )

    def configuration(self) -> Configuration:
        """The layered ``recall.yaml`` this resource names, checked whole (kept per content of its files, so the
        assets and checks of one run share one load)."""
        return load(self.config_file())

    def pipeline(self) -> Pipeline:
        """The scan's stages as ``recall scan`` runs them from this home and config: baselines and snapshots kept
        in RECALL_HOME/state, findings measured on MLflow's versions as ``impact.measured`` says."""
        return home_pipeline(self.settings(), self.configuration())

    def models(self) -> MlflowModels:
        """Where impact tests load the served versions and their held-out rows."""
        loaded = self.configuration()
        return MlflowModels(self.settings().mlflow_uri, loaded.impact, loaded.warehouse)

    @contextmanager
    def open_graph(self, read_only: bool = True) -> Iterator[MetadataGraph]:
        graph = open_graph(self.settings(), read_only=read_only)
        try:
            yield graph
        finally:
            graph.close()

    def mlflow_client(self) -> "MlflowClient":
        """The registry client impact tests use too: the same limits, the same refusal of a missing store."""
        return self.models().client()


def _env(name: str, default: str = "") -> str:
    """An :class:`EnvVar` when the variable is set, so Dagster resolves it at run time; else the default."""
    return EnvVar(name) if os.environ.get(name) else default
