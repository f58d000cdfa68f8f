"""The scan pipeline of one Recall home, built in one place for every entry point that scans it.

``recall scan``, the Dagster assets, the MCP server and a model's verdict check
all scan the home ``RECALL_HOME`` names with the configuration loaded from it.
They differ only in whether the scan is recorded (baselines and snapshots kept
for the next scan) and whether findings are replayed on their models; which
stores and which replay that means is decided here, so two entry points cannot
scan one home differently.
"""

from __future__ import annotations

from recall_dagster.kept.baselines import JsonStateStore, MemoryStateStore, StateStore
from recall_dagster.config.build import Configuration
from recall_dagster.impact.measured import mlflow_measure
from recall_dagster.scan import Pipeline
from recall_dagster.settings import Settings
from recall_dagster.kept.snapshots import SnapshotStore


def home_pipeline(settings: Settings, loaded: Configuration, *, recording: bool = True,
                  measured: bool = True) -> Pipeline:
    """The pipeline over ``settings``' home. Recording, it keeps baselines and closure snapshots in the home's
    state folder; otherwise it reads the baselines kept there and writes nothing (a read-only tool, a check
    that only judges). Measured, each replayable finding is replayed on MLflow's versions as
    ``impact.measured`` says."""
    kept = JsonStateStore(settings.state_dir)
    store: StateStore = kept if recording else MemoryStateStore(kept.load_baselines())
    return Pipeline(loaded.scan, store, SnapshotStore(settings.state_dir) if recording else None,
                    mlflow_measure(settings, loaded.lifecycle, loaded.impact) if measured else None)
