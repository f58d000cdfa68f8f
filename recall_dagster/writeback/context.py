"""Everything a write path plans from: the scan, the config, the graph as it is now, the clock."""

from __future__ import annotations

from dataclasses import dataclass

from recall_dagster.results import ModelReport, ScanResult
from recall_dagster.writeback.config import WritebackConfig
from recall_dagster.writeback.groups import FindingGroup
from recall_dagster.writeback.state import GraphState


@dataclass(frozen=True)
class PlanContext:
    result: ScanResult
    config: WritebackConfig
    state: GraphState
    groups: tuple[FindingGroup, ...]
    now_ms: int  # when the write-back runs: run events and audit stamps
    run_id: str  # names this write-back in run events, messages and the evidence folder
    incidents_on_models: bool  # False once the server refused an incident targeting an mlModel

    def at_or_above(self, report: ModelReport, tier: str) -> bool:
        return self.result.config.scoring.at_or_above(report.score.tier, tier)

    def report_of(self, model_urn: str) -> ModelReport | None:
        return next((m for m in self.result.models if m.closure.urn == model_urn), None)
