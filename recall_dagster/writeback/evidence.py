"""The local record of a write-back, under ``RECALL_HOME/evidence/<run id>/``.

Written before anything remote is touched, so a server that is down or a
write that fails never costs the diagnosis: ``findings.json`` (the scan's JSON
contract) and ``report.md`` first, ``plan.json`` (every MCP about to be sent)
once the graph has been read, ``outcome.json`` and the final ``report.md``
after the writes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from recall_dagster.markdown import md_text
from recall_dagster.results import ScanResult
from recall_dagster.scan_markdown import scan_report, table
from recall_dagster.writeback.plan import Plan
from recall_dagster.writeback.report import WritebackReport
from recall_dagster.writeback.writes import PATHS, Write
from recall_dagster.files import write_atomically


class Evidence:
    def __init__(self, evidence_dir: Path, run_id: str) -> None:
        self.dir = evidence_dir / run_id

    def _write(self, name: str, text: str) -> None:
        write_atomically(self.dir / name, text, "evidence")

    def _json(self, name: str, data: Any) -> None:
        self._write(name, json.dumps(data, indent=1) + "\n")

    def record_findings(self, result: ScanResult) -> None:
        self._json("findings.json", result.contract().as_json())

    def record_report(self, result: ScanResult, report: WritebackReport) -> None:
        self._write("report.md", render(result, report))

    def record_plan(self, plan: Plan, carried_over: list[Write]) -> None:
        self._json(
            "plan.json",
            {
                "run_id": plan.run_id,
                "writes": [w.to_json() for w in [*carried_over, *plan.writes]],
                "unchanged": len(plan.desired) - len(plan.writes),
                "notes": list(plan.notes),
            },
        )

    def record_outcome(self, result: ScanResult, report: WritebackReport) -> None:
        self._json("outcome.json", report.to_json())
        self.record_report(result, report)


def _writes(report: WritebackReport) -> list[str]:
    head = ["## Write-back", "", f"Run `{report.run_id}` against `{report.graph}`."]
    if report.plan is None:
        return [*head, "", f"Nothing was planned: {md_text(report.outcome.unreachable)}."]
    plan, outcome = report.plan, report.outcome
    columns = ("planned", "landed", "refused", "pending")
    lines = [
        *head,
        "",
        f"{len(plan.writes)} write(s) planned, {len(plan.desired) - len(plan.writes)} already true, "
        f"{len(report.carried_over)} carried over from earlier scans.",
        "",
        table(("path", *columns), ((path, *(c[k] for k in columns)) for path, c in report.counts().items())),
        "",
    ]
    by_path = sorted(plan.writes, key=lambda w: PATHS.index(w.path))
    lines += [f"- {w.path}: {md_text(w.why)} (`{w.aspect_name}` on {md_text(w.urn)})" for w in by_path]
    if plan.writes and not outcome.attempts:
        lines += ["", "Not written yet."]
    failures = (("Refused by the server", outcome.refused), ("Pending for the next scan", outcome.pending))
    for title, failed in failures:
        if failed:
            lines += ["", f"### {title}", "",
                      *(f"- {md_text(w.why)} ({md_text(w.urn)}): {md_text(reason)}" for w, reason in failed)]
    notes = [*report.notes, *(f"{n.channel} {n.event} {n.incident}: {n.error or 'sent'}" for n in report.notices)]
    if notes:
        lines += ["", "### Notes", "", *(f"- {md_text(note)}" for note in notes)]
    return lines


def render(result: ScanResult, report: WritebackReport) -> str:
    """The Markdown report: the scan as the Dagster UI shows it, then what was (or will be) written."""
    return scan_report(result) + "\n" + "\n".join(_writes(report)) + "\n"
