"""What one write-back did: planned, landed, refused, still pending, announced."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recall_dagster.errors import ServiceUnreachable
from recall_dagster.writeback.emit import Outcome
from recall_dagster.writeback.notify import Notice
from recall_dagster.writeback.plan import Plan
from recall_dagster.writeback.writes import PATHS, Write


def _brief(write: Write, reason: str | None = None) -> dict[str, Any]:
    entry = {"path": write.path, "urn": write.urn, "aspect": write.aspect_name, "why": write.why}
    return entry if reason is None else {**entry, "reason": reason}


@dataclass(frozen=True)
class WritebackReport:
    run_id: str
    graph: str
    evidence_dir: Path
    plan: Plan | None  # None when the graph could not be read to plan against
    carried_over: tuple[Write, ...] = ()  # run events of earlier scans sent again
    outcome: Outcome = field(default_factory=Outcome)
    notices: tuple[Notice, ...] = ()
    notes: tuple[str, ...] = ()
    dry_run: bool = False

    @property
    def ok(self) -> bool:
        """Everything planned is in the graph (refusals aside: they are reported, not retried)."""
        return self.plan is not None and not self.outcome.pending and self.outcome.unreachable is None

    def raise_for_status(self) -> None:
        """Fail like a service that is down: the evidence is on disk and the next scan retries the rest."""
        if self.ok or self.dry_run:
            return
        reason = self.outcome.unreachable or (self.outcome.pending[0][1] if self.outcome.pending else "")
        raise ServiceUnreachable(
            f"write-back to {self.graph} incomplete: {len(self.outcome.pending)} write(s) pending "
            f"({reason}); the evidence is in {self.evidence_dir} and the next scan retries"
        )

    def counts(self) -> dict[str, dict[str, int]]:
        planned = self.plan.writes if self.plan is not None else ()
        return {
            path: {
                "planned": sum(1 for w in planned if w.path == path),
                "landed": sum(1 for w in self.outcome.landed if w.path == path),
                "refused": sum(1 for w, _ in self.outcome.refused if w.path == path),
                "pending": sum(1 for w, _ in self.outcome.pending if w.path == path),
            }
            for path in PATHS
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "graph": self.graph,
            "evidence_dir": str(self.evidence_dir),
            "dry_run": self.dry_run,
            "ok": self.ok,
            "unchanged": len(self.plan.desired) - len(self.plan.writes) if self.plan is not None else None,
            "counts": self.counts(),
            "carried_over": len(self.carried_over),
            "attempts": self.outcome.attempts,
            "unreachable": self.outcome.unreachable,
            "refused": [_brief(w, r) for w, r in self.outcome.refused],
            "pending": [_brief(w, r) for w, r in self.outcome.pending],
            "notifications": [
                {"channel": n.channel, "incident": n.incident, "event": n.event, "error": n.error} for n in self.notices
            ],
            "notes": list(self.notes),
        }
