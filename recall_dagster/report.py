"""The terminal report: what is about to break, how badly, and where to start.

Rows are models (worst first) with a score bar; findings follow grouped by
severity so the critical ones are read first; the blast-radius section shows
which broken datasets to fix first because they endanger the most traffic.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from recall_dagster.detect import Severity, count_by_severity
from recall_dagster.estate import display_name
from recall_dagster.scan import ScanResult, iso_instant

_TIER_STYLE = {"CRITICAL": "bold red", "AT_RISK": "yellow", "WATCH": "cyan", "HEALTHY": "green"}
_SEVERITY_STYLE = {Severity.CRITICAL: "bold red", Severity.WARN: "yellow", Severity.INFO: "dim"}
_BAR_WIDTH = 10


def _bar(score: int, max_score: int, style: str) -> Text:
    filled = round(_BAR_WIDTH * score / max_score) if max_score else 0
    return Text("█" * filled, style=style) + Text("░" * (_BAR_WIDTH - filled), style="dim")


def _path(path: list[str]) -> str:
    return " → ".join(display_name(u) for u in path)


def render_report(result: ScanResult, console: Console) -> None:
    scoring = result.config.scoring
    production = sum(1 for m in result.models if m.closure.production)
    console.print(
        f"[bold]Recall scan[/] of {result.graph} at {iso_instant(result.scanned_at_ms)}: "
        f"{len(result.models)} model(s), {production} in production"
    )
    if not result.models:
        console.print("No models to report (only production models are scanned unless --all is given).")
        return

    table = Table(show_edge=False, header_style="bold")
    table.add_column("model", no_wrap=True)
    table.add_column("prod")
    table.add_column("tier", no_wrap=True)
    table.add_column("score", justify="right")
    table.add_column("", no_wrap=True)
    table.add_column("live", justify="right")
    table.add_column("crit/warn/info", justify="right", no_wrap=True)
    for report in result.models:
        style = _TIER_STYLE.get(report.score.tier, "white")
        counts = list(count_by_severity(report.findings).values())
        table.add_row(
            report.closure.model.name,
            "yes" if report.closure.production else "no",
            Text(report.score.tier, style=style),
            str(report.score.value),
            _bar(report.score.value, scoring.max_score, style),
            str(len(report.closure.live_deployments)),
            "/".join(map(str, counts)),
        )
    console.print(table)
    console.print("[dim]Coverage: " + "; ".join(result.coverage.lines()) + "[/]", highlight=False)

    for severity in Severity:
        entries = [(r, f) for r in result.models for f in r.findings if f.severity is severity]
        if not entries:
            continue
        console.print()
        console.print(Text(f"{severity.value} ({len(entries)})", style=_SEVERITY_STYLE[severity]))
        for report, f in entries:
            console.print(f"  [bold]{report.closure.model.name}[/] [dim]{f.detector}[/]  {f.message}", highlight=False)
            console.print(f"    [dim]{_path(list(f.evidence.get('path', [])))}[/]", highlight=False)

    accepted = [(r, f, a) for r in result.models for f, a in r.accepted]
    if accepted:
        console.print()
        console.print(Text(f"Acknowledged, not scored ({len(accepted)})", style="dim"))
        for report, f, a in accepted:
            console.print(f"  [bold]{report.closure.model.name}[/] [dim]{f.detector}[/]  {f.message}", highlight=False)
            console.print(f"    [dim]{a.by} until {iso_instant(a.until_ms)}: {a.reason} ({a.id})[/]", highlight=False)

    if result.blast_radius:
        console.print()
        console.print(Text("Blast radius", style="bold"))
        radius = Table(show_edge=False, header_style="bold")
        for column in ("dataset", "at risk from", "production models", "live deployments"):
            radius.add_column(column, justify="right" if column == "live deployments" else "left")
        for b in result.blast_radius:
            radius.add_row(
                display_name(b.dataset),
                ", ".join(b.flagged_by),
                ", ".join(display_name(m) for m in b.models) or "-",
                str(b.deployments),
            )
        console.print(radius)

    failing = result.failing
    console.print()
    if failing:
        console.print(
            f"[bold red]{len(failing)} model(s) at or above the fail tier {scoring.fail_tier}:[/] "
            + ", ".join(m.closure.model.name for m in failing)
        )
    else:
        console.print(f"[green]No model reaches the fail tier {scoring.fail_tier}.[/]")
