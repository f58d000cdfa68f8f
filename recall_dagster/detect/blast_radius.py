"""Invert the graph: for each dataset at risk, which production models and live deployments it endangers.

This detector runs after all others, because "at risk" is what they found:
a dataset is at risk when a detector listed under ``blast_radius`` in
``recall.yaml`` blames it at the configured severity or above.  The estate-wide
ranking (the scan's ``blast_radius`` section) is built here too, from the same
two indexes, so the per-model findings and the section never disagree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Container, Iterable

from recall_dagster.contracts import scan as contract
from recall_dagster.detect.config import ScanConfig
from recall_dagster.detect.finding import Finding, finding
from recall_dagster.detect.state import DetectorState, Exposure
from recall_dagster.estate import Closure, ModelClosure, display_name
from recall_dagster.detect.declared import Detector

NAME = "blast_radius"
CASES = ("at_risk",)


@dataclass(frozen=True)
class BlastRadius:
    dataset: str
    models: tuple[str, ...]  # production models that depend on it
    deployments: int  # live deployments of those models
    flagged_by: tuple[str, ...]  # detectors that put it at risk

    def contract(self) -> contract.AtRisk:
        return contract.AtRisk(dataset=self.dataset, models=list(self.models), deployments=self.deployments,
                               flagged_by=list(self.flagged_by))


def exposure_index(closures: Iterable[Closure], at_risk: Container[str]) -> dict[str, Exposure]:
    """Dataset URN -> production models whose closure holds it, and their live deployments; only for the
    datasets ``at_risk``, since no other dataset endangers anyone (and most of an estate's are healthy)."""
    models: dict[str, set[str]] = {}
    deployments: dict[str, set[str]] = {}
    for closure in closures:
        held = [urn for urn in closure.dataset_urns if urn in at_risk] if closure.production else ()
        if not held:
            continue
        live = {d.urn for d in closure.live_deployments}
        for urn in held:
            models.setdefault(urn, set()).add(closure.urn)
            deployments.setdefault(urn, set()).update(live)
    return {u: Exposure(tuple(sorted(models[u])), tuple(sorted(deployments[u]))) for u in sorted(models)}


def at_risk_index(findings: Iterable[Finding], config: ScanConfig) -> dict[str, tuple[str, ...]]:
    """Dataset URN -> detectors whose findings blame it at or above the configured severity."""
    blamed: dict[str, set[str]] = {}
    rule = config.blast_radius
    for f in findings:
        if f.cause and f.detector in rule.at_risk_detectors and f.severity.at_least(rule.min_severity):
            blamed.setdefault(f.cause, set()).add(f.detector)
    return {u: tuple(sorted(blamed[u])) for u in sorted(blamed)}


def _radius(urn: str, state: DetectorState) -> BlastRadius:
    exposure = state.exposure.get(urn, Exposure())
    return BlastRadius(urn, exposure.models, len(exposure.deployments), state.at_risk.get(urn, ()))


def _rank_key(radius: BlastRadius) -> tuple[int, int, str]:
    return (-radius.deployments, -len(radius.models), radius.dataset)


def rank(state: DetectorState) -> list[BlastRadius]:
    """Every at-risk dataset, the most live deployments endangered first."""
    return sorted((_radius(u, state) for u in state.at_risk), key=_rank_key)


def detect(closure: ModelClosure, config: ScanConfig, state: DetectorState) -> list[Finding]:
    radii = sorted((_radius(u, state) for u in closure.datasets if u in state.at_risk), key=_rank_key)
    return [
        finding(
            closure,
            NAME,
            config.severity(NAME, "at_risk"),
            r.dataset,
            f"{display_name(r.dataset)} is at risk ({', '.join(r.flagged_by)}) and endangers "
            f"{_count(len(r.models), 'production model')} and {_count(r.deployments, 'live deployment')}",
            cause=r.dataset,
            models=list(r.models),
            deployments=r.deployments,
            flagged_by=list(r.flagged_by),
        )
        for r in radii
    ]


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


DETECTOR = Detector(NAME, detect, CASES)
