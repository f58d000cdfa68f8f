"""What the MLflow registry says right now, read once so enrichment can be a pure function.

DataHub's mlflow source leaves out the warehouse tables each run read and the
feature store's features it consumed (the run's ``feature_refs`` parameter).
Aliases are not among them: Recall reads those from the registry itself.
"""

from __future__ import annotations

from dataclasses import dataclass

from ml_models.feature_store import FEATURE_REFS
from recall_dagster.errors import ServiceUnreachable


@dataclass(frozen=True)
class VersionState:
    registered_name: str
    version: int
    run_id: str | None
    input_names: tuple[str, ...]  # MLflow dataset names of the run's inputs, e.g. warehouse.marts.fct_orders
    feature_refs: tuple[str, ...] = ()  # Feast references (view:feature) training logged, in its order


def read_mlflow_state(tracking_uri: str, registered_names: list[str]) -> list[VersionState]:
    """Every version of the named registered models, with its run's inputs and the features it consumed."""
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=tracking_uri, registry_uri=tracking_uri)
    states: list[VersionState] = []
    try:
        for name in registered_names:
            versions = client.search_model_versions(f"name = '{name}'")
            if not versions:
                continue
            for version in sorted(versions, key=lambda v: int(v.version)):
                inputs: tuple[str, ...] = ()
                refs: tuple[str, ...] = ()
                if version.run_id:
                    run = client.get_run(version.run_id)
                    inputs = tuple(sorted(d.dataset.name for d in run.inputs.dataset_inputs))
                    refs = tuple(r for r in run.data.params.get(FEATURE_REFS, "").split(",") if r)
                states.append(
                    VersionState(
                        registered_name=name,
                        version=int(version.version),
                        run_id=version.run_id,
                        input_names=inputs,
                        feature_refs=refs,
                    )
                )
    except MlflowException as err:
        raise ServiceUnreachable(f"MLflow at {tracking_uri} could not be read: {err}") from err
    return states
