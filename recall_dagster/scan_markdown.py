"""A scan as Markdown: the tables the Dagster UI shows and the report kept as evidence.

The terminal report (:mod:`recall_dagster.report`) draws with rich; these are
the same facts as plain Markdown, which the Dagster UI renders in asset
metadata and which any reviewer can open from the evidence folder.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Iterable, Sequence

from recall_dagster.detect import Finding, Severity, count_by_severity
from recall_dagster.detect.blast_radius import BlastRadius
from recall_dagster.estate import Closure, display_name
from recall_dagster.results import ScanResult
from recall_dagster.instants import iso_instant
from recall_dagster.estate.unlinked import unlinked_line
from recall_dagster.markdown import md_list, md_text

if TYPE_CHECKING:
    from recall_dagster.detect import Detection
    from recall_dagster.lifecycle.retrain_gate import GateResult


def number(value: object, digits: int = 4) -> str:
    """A measurement as reports print it: floats to ``digits`` places, a dash for none."""
    return "–" if value is None else f"{value:.{digits}f}" if isinstance(value, float) else str(value)


METADATA_ROWS = 50  # rows a table shows in Dagster's UI; the evidence files hold them all


def table(header: Sequence[str], rows: Iterable[Sequence[object]], limit: int | None = METADATA_ROWS) -> str:
    """A Markdown table of at most ``limit`` rows (all with None), the rest counted in a last line.

    Asset metadata is stored with every materialization: at ten thousand models
    an unbounded table would dwarf the run it describes.
    """
    listed = list(rows)
    shown = listed if limit is None else listed[:limit]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(md_text(v) for v in row) + " |" for row in shown]
    if len(shown) < len(listed):
        lines.append(f"\n… and {len(listed) - len(shown):,} more row(s): the evidence under RECALL_HOME holds them all.")
    return "\n".join(lines)


def closures_table(closures: Sequence[Closure], limit: int | None = METADATA_ROWS) -> str:
    """What each scanned model depends on: the size of its world, before anything is judged."""
    return table(
        ("model", "production", "live deployments", "features", "training runs", "datasets"),
        (
            (c.model.name, "yes" if c.production else "no", len(c.live_deployments), len(c.features),
             len(c.training_runs), len(c.datasets))
            for c in (any_closure.whole() for any_closure in closures)
        ),
        limit,
    )


def models_table(result: ScanResult, limit: int | None = METADATA_ROWS) -> str:
    """Models worst first, with score, tier and finding counts by severity."""
    return table(
        ("model", "production", "tier", "score", "live deployments", "critical / warn / info"),
        (
            (m.closure.model.name, "yes" if m.closure.production else "no", m.score.tier, m.score.value,
             len(m.closure.live_deployments), " / ".join(str(n) for n in count_by_severity(m.findings).values()))
            for m in result.models
        ),
        limit,
    )


def detector_counts(findings: Iterable[Finding]) -> str:
    """Findings per detector and severity: which kind of problem dominates."""
    by_detector: dict[str, Counter[Severity]] = {}
    for f in findings:
        by_detector.setdefault(f.detector, Counter())[f.severity] += 1
    return table(
        ("detector", *(s.value for s in Severity), "total"),
        (
            (name, *(counts[s] for s in Severity), sum(counts.values()))
            for name, counts in sorted(by_detector.items(), key=lambda item: (-sum(item[1].values()), item[0]))
        ),
    )


def blast_radius_table(radii: Sequence[BlastRadius], limit: int | None = METADATA_ROWS) -> str:
    """Broken datasets, the one endangering the most live deployments first: where to start fixing."""
    if not radii:
        return "No dataset is at risk."
    return table(
        ("dataset", "at risk from", "production models", "live deployments"),
        (
            (display_name(b.dataset), ", ".join(b.flagged_by),
             ", ".join(display_name(m) for m in b.models) or "-", b.deployments)
            for b in radii
        ),
        limit,
    )


def findings_table(findings: Iterable[Finding], limit: int | None = METADATA_ROWS) -> str:
    """One row per finding; ``where`` is the dataset at fault when there is one, else the subject."""
    return table(
        ("severity", "detector", "where", "message"),
        ((f.severity.value, f.detector, display_name(f.cause or f.subject), f.message) for f in findings),
        limit,
    )


def measured_table(closures: Sequence[Closure], detection: "Detection") -> str:
    """Findings replayed on their model: the verdict, the severity it moved from, the measurement behind it."""
    names = {c.urn: c.model.name for c in closures}
    rows = []
    for urn, found in detection.findings.items():
        for f in found:
            measured = f.evidence.get("measured")
            if measured is None:
                continue
            experiments = measured.get("experiments", ())
            first = experiments[0]["results"][0] if experiments and experiments[0]["results"] else {}
            how = ", ".join(f"{e['mutation']} on {e['column']}" for e in experiments) or measured.get("reason", "")
            rows.append((
                names.get(urn, urn), f.detector, display_name(f.cause or f.subject),
                measured.get("verdict") or "unmeasured", f"{measured.get('severity_before', f.severity.value)} → "
                f"{f.severity.value}", how, first.get("reason", ""),
            ))
    if not rows:
        return "No finding was replayed on a model."
    return table(("model", "detector", "where", "verdict", "severity", "replayed as", "measurement"), rows)


_CHECK_ORDER = {"FAIL": 0, "WARN": 1, "PASS": 2, "SKIP": 3}  # failing checks first, unmeasured last


def checks_table(gate: "GateResult") -> str:
    """The retrain gate's named checks, failing ones first, each with what it saw."""
    rows = sorted(gate.checks, key=lambda c: _CHECK_ORDER[c.status])
    return table(("check", "status", "summary"), [(c.name, c.status, c.summary) for c in rows])


def check_details(gate: "GateResult") -> str:
    """What each check saw, in the table's order: the failing tests, the stale inputs and where their times
    came from, why a check could not measure."""
    return "\n".join(
        f"- **{c.name}** ({c.status}): " + "; ".join(md_text(d) for d in c.details)
        for c in sorted(gate.checks, key=lambda c: _CHECK_ORDER[c.status]) if c.details
    )


def coverage_list(result: ScanResult) -> str:
    """What the scan could verify, one line per signal: an empty finding list means little where this is thin."""
    unmarked = result.without_production.unmarked
    unlinked = unlinked_line(result.unlinked)
    lines = [*result.coverage.lines(),
             *([f"UNVERIFIED: nothing marks a version of {', '.join(unmarked)} as production"] if unmarked else []),
             *([unlinked] if unlinked else [])]
    return md_list(lines)


def scan_report(result: ScanResult, limit: int | None = None) -> str:
    """The whole scan as one Markdown document: models, findings by model, blast radius, verdict; ``limit``
    bounds each table (for asset metadata), None lists everything (the evidence file)."""
    scoring = result.config.scoring
    failing = result.failing
    parts = [
        f"# Recall scan at {iso_instant(result.scanned_at_ms)}",
        f"Graph: `{result.graph}`; {len(result.models)} model(s) scanned; fail tier {scoring.fail_tier}.",
        "## Models",
        models_table(result, limit),
        "## Findings by detector",
        detector_counts(f for m in result.models for f in m.findings),
    ]
    for report in result.models:
        if report.findings:
            parts += [f"### {md_text(report.closure.model.name)} ({report.score.tier}, {report.score.value})",
                      findings_table(report.findings, limit)]
    parts += ["## Blast radius", blast_radius_table(result.blast_radius, limit), "## Coverage", coverage_list(result)]
    parts.append("## Verdict")
    parts.append(
        f"{len(failing)} model(s) at or above {scoring.fail_tier}: "
        + ", ".join(md_text(m.closure.model.name) for m in failing)
        if failing else f"No model reaches the fail tier {scoring.fail_tier}."
    )
    return "\n\n".join(parts) + "\n"
