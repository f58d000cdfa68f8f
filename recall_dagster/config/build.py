"""The checked file (:mod:`recall_dagster.config.models`) turned into the objects each domain reads.

A section a domain reads as written is handed over as it is (each derives what
it needs from itself, as the scoring section ranks its tiers). What is built
here joins sections: the scan's configuration (a dozen sections, named by the
file that spoke last for messages), the resolver's options (``closure`` and
``production``), the lifecycle's (with the warehouse its row counts reach and
the Dagster UI its verdicts link to), and how a failing test reaches a model,
which the scan and the lifecycle both read. Every check has
happened by the time anything here runs, so nothing here raises but the
detector catalogue's own (a detector or case the file does not configure).
"""

from __future__ import annotations

from dataclasses import dataclass

from recall_dagster.config.dagster import DagsterConfig
from recall_dagster.config.models import Lifecycle, RecallFile
from recall_dagster.config.warehouse import Warehouse
from recall_dagster.detect import ScanConfig, check_config
from recall_dagster.diagnose.config import DiagnoseConfig
from recall_dagster.estate import ResolveOptions
from recall_dagster.estate.options import ReachOptions
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


@dataclass(frozen=True)
class _Reading:
    """What the scan and the lifecycle both read from ``lifecycle:``, built once for both: how a failure reaches
    a model and which results fail."""

    reach: ReachOptions
    failing_results: frozenset[str]

    @classmethod
    def of(cls, lc: Lifecycle) -> "_Reading":
        return cls(ReachOptions(table_level=lc.table_level, name_matching=lc.name_matching),
                   frozenset(r.upper() for r in lc.failing_results))


def _scan(f: RecallFile, source: str, reading: _Reading) -> ScanConfig:
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
        reach=reading.reach,
        failing_results=reading.failing_results,
        acknowledgements=f.acknowledgements,
    )
    check_config(config)
    return config


def _lifecycle(lc: Lifecycle, reading: _Reading, warehouse: Warehouse, dagster_url: str) -> LifecycleConfig:
    return LifecycleConfig(
        failing_results=reading.failing_results,
        reach=reading.reach,
        severity=lc.severity,
        classification=tuple(lc.classification.items()),
        default_classification=lc.default_classification,
        gate=lc.gate,
        training_rows_metric=lc.training_rows_metric,
        row_counts=tuple(lc.row_counts.items()),
        warehouse=warehouse,
        dagster_url=dagster_url,
    )


def build(f: RecallFile, source: str) -> Configuration:
    """Each domain's view of the checked file ``f``; ``source`` is the file that spoke last, for messages."""
    reading = _Reading.of(f.lifecycle)
    return Configuration(
        source=source,
        scan=_scan(f, source, reading),
        warehouse=f.warehouse,
        lifecycle=_lifecycle(f.lifecycle, reading, f.warehouse, f.dagster.webserver_url),
        impact=f.impact,
        writeback=f.writeback,
        protect=f.protect,
        diagnose=f.diagnose,
        dagster=f.dagster,
        narration=f.narration,
    )
