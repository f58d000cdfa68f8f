"""What a detector says: one problem, how serious, what it is about and how we know."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from recall_dagster.contracts import scan as contract
from recall_dagster.estate import Closure, ModelClosure
from recall_dagster.severity import Severity


@dataclass(frozen=True)
class Finding:
    """One problem found in one model's closure.

    ``subject`` is the entity the message is about; ``cause`` is the dataset
    at fault when there is one: blast radius is counted on it, and write-back
    hangs assertions on it (DataHub only accepts assertions on datasets).
    ``evidence["path"]`` runs from the model to the subject.
    """

    detector: str
    severity: Severity
    subject: str
    message: str
    evidence: Mapping[str, Any] = field(default_factory=dict)
    cause: str | None = None

    def about(self, closure: Closure, name: str) -> bool:
        """Whether the finding is on, or caused by, what ``name`` names: a URN, or any name of the table
        (``platform:name``, full name, dotted suffix, a dbt node's ``unique_id``, a twin's) in ``closure``."""
        return any(u is not None and closure.whole().named(u, name) for u in (self.subject, self.cause))

    def contract(self, acknowledged: contract.Acknowledged | None) -> contract.Finding:
        """The finding as a scan reports it; ``acknowledged`` when an acknowledgement covers it."""
        return contract.Finding(detector=self.detector, severity=self.severity, subject=self.subject,
                                message=self.message, evidence=dict(self.evidence), cause=self.cause,
                                acknowledged=acknowledged)


def finding(
    closure: ModelClosure,
    detector: str,
    severity: Severity,
    subject: str,
    message: str,
    *,
    cause: str | None = None,
    path: tuple[str, ...] | None = None,
    **evidence: Any,
) -> Finding:
    """A finding whose evidence starts with the path from the model to the subject."""
    route = path if path is not None else closure.path_to(subject)
    return Finding(
        detector=detector,
        severity=severity,
        subject=subject,
        message=message,
        evidence={"path": list(route), **evidence},
        cause=cause,
    )


def count_by_severity(findings: Iterable[Finding]) -> dict[Severity, int]:
    """How many findings of each severity, every severity present (most severe first)."""
    found = [f.severity for f in findings]
    return {s: found.count(s) for s in Severity}
