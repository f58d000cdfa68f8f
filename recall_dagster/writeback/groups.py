"""Findings gathered by what they are about: one (detector, subject), whichever models share it.

Several models served from one broken table each report the same problem; in
DataHub that is one assertion and one incident naming every model affected,
not one per model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from recall_dagster.detect import Finding, Severity
from recall_dagster.results import ModelReport, ScanResult


@dataclass(frozen=True)
class FindingGroup:
    detector: str
    subject: str
    severity: Severity  # the most serious any model reports
    models: tuple[str, ...]  # model URNs reporting it, sorted
    finding: Finding  # the first model's finding, for message and evidence
    dataset: str | None  # where an assertion or fallback incident hangs: the cause, else a dataset subject


def _dataset_of(findings: Sequence[Finding]) -> str | None:
    for f in findings:
        if f.cause:
            return f.cause
    subject = findings[0].subject
    return subject if subject.startswith("urn:li:dataset:") else None


def group_findings(result: ScanResult) -> tuple[FindingGroup, ...]:
    """Every (detector, subject) the scan reports, sorted by detector then subject."""
    reports: dict[tuple[str, str], list[tuple[ModelReport, Finding]]] = {}
    for report in sorted(result.models, key=lambda m: m.closure.urn):
        for f in report.findings:
            reports.setdefault((f.detector, f.subject), []).append((report, f))
    groups = []
    for (detector, subject), entries in sorted(reports.items()):
        findings = [f for _, f in entries]
        groups.append(
            FindingGroup(
                detector=detector,
                subject=subject,
                severity=min((f.severity for f in findings), key=lambda s: s.rank),
                models=tuple(sorted({r.closure.urn for r, _ in entries})),
                finding=findings[0],
                dataset=_dataset_of(findings),
            )
        )
    return tuple(groups)
