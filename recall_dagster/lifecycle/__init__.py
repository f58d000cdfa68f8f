"""From a failing dbt test to a resolved incident: blast radius, blind window, retrain gate, postmortem.

Pure core (``blast``, ``window``, ``verdict``, ``assess``,
``incidents``, ``postmortem``, ``gate``) over plain values; thin readers over
the graph port (``read``); the entry points the CLI and Dagster share
(``service``); writes through the write-back's emitter (``publish``).
"""

from recall_dagster.lifecycle.config import LifecycleConfig, load_lifecycle_config, parse_lifecycle_config
from recall_dagster.lifecycle.gate import GateResult
from recall_dagster.lifecycle.service import (
    BlindWindowReport,
    SyncResult,
    assess,
    blind_window_report,
    evaluate_gate,
    select_version,
    sync_incidents,
)

__all__ = [
    "BlindWindowReport",
    "GateResult",
    "LifecycleConfig",
    "SyncResult",
    "assess",
    "blind_window_report",
    "evaluate_gate",
    "load_lifecycle_config",
    "parse_lifecycle_config",
    "select_version",
    "sync_incidents",
]
