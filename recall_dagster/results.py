"""What a scan found: each model's open and acknowledged findings, its score, and the estate's blast radius,
as the JSON contract and every renderer read them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from recall_dagster.acks.model import Accepted, Acknowledgement, split
from recall_dagster.acks.trust import Ignored
from recall_dagster.contracts import scan as contract
from recall_dagster.contracts.base import VERSION, Json
from recall_dagster.detect import Detection, Finding, ScanConfig
from recall_dagster.detect.blast_radius import BlastRadius
from recall_dagster.estate import Closure
from recall_dagster.estate.coverage import Coverage, coverage
from recall_dagster.kept.incremental import Rescan
from recall_dagster.estate.unlinked import Outside
from recall_dagster.estate.unserved import Unserved
from recall_dagster.instants import iso_instant
from recall_dagster.score import Score, score_model


@dataclass(frozen=True)
class ModelReport:
    """A model's open findings (what its score counts) and those an acknowledgement covers (shown, not counted)."""

    closure: Closure
    findings: tuple[Finding, ...]
    score: Score
    accepted: tuple[tuple[Finding, Accepted], ...] = ()

    def contract(self) -> contract.ModelReport:
        model = self.closure.model
        findings = [f.contract(None) for f in self.findings]
        findings += [f.contract(a.contract()) for f, a in self.accepted]
        return contract.ModelReport(
            urn=model.urn,
            name=model.name,
            version=model.version,
            production=self.closure.production,
            score=self.score.value,
            tier=self.score.tier,
            deployments=len(self.closure.live_deployments),
            live_deployments=[d.urn for d in self.closure.live_deployments],
            findings=findings,
        )


@dataclass(frozen=True)
class ScanResult:
    scanned_at_ms: int
    graph: str
    models: tuple[ModelReport, ...]  # highest score first
    blast_radius: tuple[BlastRadius, ...]
    config: ScanConfig
    acks: tuple[Acknowledgement, ...] = ()  # the acknowledgements the scan honoured
    ignored_acks: tuple[Ignored, ...] = ()  # and those it read and set aside (untrusted, too long), with why
    rescan: Rescan | None = None  # how the closures were come by, when the scan kept a snapshot
    # registered models with no version in production: a whole-estate scan names them rather than pass them over
    without_production: Unserved = Unserved()
    unlinked: tuple[Outside, ...] = ()  # failing assertions on data no scanned model reads: said, not passed over

    @property
    def failing(self) -> tuple[ModelReport, ...]:
        """Models at or above the configured fail tier."""
        scoring = self.config.scoring
        return tuple(m for m in self.models if scoring.at_or_above(m.score.tier, scoring.fail_tier))

    @property
    def coverage(self) -> Coverage:
        """What the graph let this scan verify about the models it scanned and the tables they reach."""
        return coverage([m.closure.whole() for m in self.models], self.scanned_at_ms)

    def contract(self, writeback: Json | None = None) -> contract.Scan:
        """The scan's answer; ``writeback`` when the scan wrote back, or planned to (``--writeback``,
        ``--dry-run``). ``resolve`` and ``writeback`` are left out, not null, when the scan has none."""
        answer = contract.Scan(
            schema_version=VERSION,
            scanned_at=iso_instant(self.scanned_at_ms),
            graph=self.graph,
            fail_tier=self.config.scoring.fail_tier,
            models=[m.contract() for m in self.models],
            blast_radius=[b.contract() for b in self.blast_radius],
            coverage=self.coverage.contract(self.without_production, [o.contract() for o in self.unlinked]),
            ignored_acknowledgements=[i.contract() for i in self.ignored_acks],
        )
        if self.rescan is not None:
            answer.resolve = self.rescan.contract()
        if writeback is not None:
            answer.writeback = writeback
        return answer


def score_models(
    closures: Sequence[Closure], detection: Detection, config: ScanConfig, *,
    acks: Sequence[Acknowledgement] = (), at_ms: int,
) -> tuple[ModelReport, ...]:
    """Each model scored on the findings no acknowledgement in force at ``at_ms`` covers."""
    reports = []
    for c in closures:
        part = split(c, detection.findings.get(c.urn, ()), acks, at_ms)
        score = score_model(part.open, len(c.live_deployments), config.scoring)
        reports.append(ModelReport(closure=c, findings=part.open, score=score, accepted=part.accepted))
    return tuple(sorted(reports, key=lambda r: (-r.score.value, r.closure.model.name, r.closure.urn)))
