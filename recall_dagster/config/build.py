"""The checked file (:mod:`recall_dagster.config.models`) turned into the objects each domain reads.

A section a domain reads as written is handed over as it is (each derives what
it needs from itself, as the scoring section ranks its tiers). What is built
here joins sections: the scan's configuration (a dozen sections, named by the
file that spoke last for messages, with how a failing test reaches a model as
the lifecycle section reads it) and the resolver's options (``closure`` and
``production``); the lifecycle section is handed the warehouse its row counts
reach and the Dagster UI its verdicts link to. Every check has
happened by the time anything here runs, so nothing here raises but the
detector catalogue's own (a detector or case the file does not configure).
"""

from __future__ import annotations

from dataclasses import dataclass

from recall_dagster.config.dagster import DagsterConfig
from recall_dagster.config.models import RecallFile
from recall_dagster.config.warehouse import Warehouse
from recall_dagster.detect import ScanConfig, check_config
from recall_dagster.diagnose.config import DiagnoseConfig
from recall_dagster.estate import ResolveOptions
from recall_dagster.impact.config import ImpactConfig
from recall_dagster.lifecycle.config import LifecycleConfig
from recall_dagster.protect.config import ProtectConfig
from recall_dagster.rewrite import Rewrite
from recall_dagster.writeback.config import WritebackConfig


@dataclass(frozen=True)
class Configuration:
    """Every section of the layered ``recall.yaml``, parsed and checked: what one command is handed."""

    source: str  # the file that spoke last, for messages
    scan: ScanConfig
    warehouse: Warehouse  # the team's warehouse, which the lifecycle's row counts and impact's query reach
    lifecycle: LifecycleConfig
    impact: ImpactConfig
    writeback: WritebackConfig
    protect: ProtectConfig
    diagnose: DiagnoseConfig
    dagster: DagsterConfig
    narration: Rewrite


def _scan(f: RecallFile, source: str) -> ScanConfig:
    config = ScanConfig(
        source=source,
        resolve=ResolveOptions(
            max_depth=f.closure.max_depth,
            history_limit=f.closure.history_limit,
            freshness_property=f.closure.freshness_property,
            feature_column_properties=tuple(f.closure.feature_column_properties),
            live_statuses=frozenset(status.upper() for status in f.production.live_statuses),
            production_aliases=frozenset(f.production.aliases),
            production_tags=frozenset(f.production.stage_tags),
        ),
        scoring=f.scoring,
        freshness=f.freshness,
        pii=f.pii,
        justification=f.justification,
        label_tables=tuple(f.label_tables),
        min_fan_in=f.critical_path.min_fan_in,
        blast_radius=f.blast_radius,
        detectors=f.detectors,
        profile_drift=f.profile_drift,
        reach=f.lifecycle.reach,
        failing_results=f.lifecycle.failing_outcomes,
        acknowledgements=f.acknowledgements,
    )
    check_config(config)
    return config


def build(f: RecallFile, source: str) -> Configuration:
    """Each domain's view of the checked file ``f``; ``source`` is the file that spoke last, for messages."""
    return Configuration(
        source=source,
        scan=_scan(f, source),
        warehouse=f.warehouse,
        lifecycle=f.lifecycle.joined(f.warehouse, f.dagster.webserver_url),
        impact=f.impact,
        writeback=f.writeback,
        protect=f.protect,
        diagnose=f.diagnose,
        dagster=f.dagster,
        narration=f.narration,
    )
