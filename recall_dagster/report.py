"""The terminal report: what is about to break, how badly, and where to start.

Rows are models (worst first) with a score bar, a registered model's versions
under it; findings follow grouped by severity so the critical ones are read
first, one line for a finding every version of a model shares; the blast-radius
section shows which broken datasets to fix first because they endanger the most
traffic.  The JSON keeps one entry per version.
"""

from __future__ import annotations

from typing import Iterable

from rich.console import Console
from rich.table import Table
from rich.text import Text

from recall_dagster.detect import Severity, count_by_severity
from recall_dagster.estate import display_name
from recall_dagster.estate.unlinked import unlinked_line
from recall_dagster.detect.config import ScoringConfig
from recall_dagster.detect.finding import Finding
from recall_dagster.narrate import DEFAULT_STEP, WHAT_TO_DO, whom_to_call
from recall_dagster.results import ModelReport, ScanResult
from recall_dagster.instants import iso_instant
from recall_dagster.scan import production_markers
from recall_dagster.shown import shown
from recall_dagster.terminal import Kind, esc, narrow_table

_TIER_STYLE = {"CRITICAL": "bold red", "AT_RISK": "yellow", "WATCH": "cyan", "HEALTHY": "green"}
_SEVERITY_STYLE = {Severity.CRITICAL: "bold red", Severity.WARN: "yellow", Severity.INFO: "dim"}
_BAR_WIDTH = 10
_BAR_FROM = 100  # terminal columns from which the score bar is drawn


def _bar(score: int, max_score: int, style: str) -> Text:
    filled = round(_BAR_WIDTH * score / max_score) if max_score else 0
    return Text("█" * filled, style=style) + Text("░" * (_BAR_WIDTH - filled), style="dim")


def _path(path: list[str]) -> str:
    return " → ".join(display_name(u) for u in path)


def _registered(reports: Iterable[ModelReport]) -> dict[str, list[ModelReport]]:
    """Versions under their registered model, in the order the worst version of each comes."""
    groups: dict[str, list[ModelReport]] = {}
    for report in reports:
        groups.setdefault(report.closure.registered_model, []).append(report)
    return groups


def _version(report: ModelReport) -> str:
    model = report.closure.model
    return f"v{model.version}" if model.version else model.name


def _shared(entries: list[tuple[ModelReport, Finding]]) -> list[tuple[ModelReport, str, str, Finding]]:
    """(a report, who, message, finding): one line per finding every version of a registered model shares, its
    message naming the registered model rather than one version."""
    lines: dict[tuple[str, str, str, str], list[tuple[ModelReport, Finding]]] = {}
    for report, f in entries:
        closure = report.closure
        said = f.message.replace(closure.model.name, closure.registered_name)
        lines.setdefault((closure.registered_model, f.detector, f.subject, said), []).append((report, f))
    out = []
    for (_, _, _, said), found in lines.items():
        (report, f), *more = found
        if more:
            out.append((report, f"{report.closure.registered_name} {', '.join(_version(r) for r, _ in found)}", said, f))
        else:
            out.append((report, report.closure.model.name, f.message, f))
    return out


def render_report(result: ScanResult, console: Console) -> None:
    scoring = result.config.scoring
    production = sum(1 for m in result.models if m.closure.production)
    console.print(
        f"[bold]Recall scan[/] of {esc(result.graph)} at {iso_instant(result.scanned_at_ms)}: "
        f"{len(result.models)} model(s), {production} in production"
    )
    unserved = result.without_production
    if unserved.unmarked:
        console.print(
            f"[yellow]UNVERIFIED: nothing marks a version of {esc(', '.join(unserved.unmarked))} as production or "
            f"otherwise[/] ({production_markers(result.config)}): name a version with --model NAME/VERSION, "
            "or scan every version with --all", highlight=False,
        )
    staged = [n for n in unserved.registered if n not in unserved.unmarked]
    if staged:
        console.print(f"[dim]Not in production, so not judged: {esc(', '.join(staged))}[/]", highlight=False)
    if not result.models:
        console.print("No models to report (only production models are scanned unless --all is given).")
        return

    bar = console.width >= _BAR_FROM  # in a narrow terminal the names need the room more than the bar
    bar_column: list[tuple[str, Kind, int]] = [("", "word", _BAR_WIDTH)] if bar else []
    table = narrow_table(("model", "name"), ("prod", "word", 3), ("tier", "word", max(map(len, scoring.tier_names()))),
                         ("score", "number", 3), *bar_column, ("live", "number"),
                         ("crit/warn/info", "number"))
    for versions in _registered(result.models).values():
        grouped = len(versions) > 1
        if grouped:
            table.add_row(Text(shown(versions[0].closure.registered_name), style="bold"),
                          *[""] * (len(table.columns) - 1))
        for report in versions:
            label = f"  {_version(report)}" if grouped else report.closure.model.name
            _model_row(table, report, Text(shown(label)), scoring, bar)
    console.print(table)
    console.print("[dim]Coverage: " + esc("; ".join(result.coverage.lines())) + "[/]", highlight=False)
    if unlinked := unlinked_line(result.unlinked):
        console.print(f"[yellow]{esc(unlinked)}[/]", highlight=False)
    if result.rescan is not None:
        console.print(f"[dim]Closures: {result.rescan.summary()}[/]", highlight=False)

    for severity in Severity:
        entries = [(r, f) for r in result.models for f in r.findings if f.severity is severity]
        if not entries:
            continue
        console.print()
        console.print(Text(f"{severity.value} ({len(entries)})", style=_SEVERITY_STYLE[severity]))
        for report, who, message, f in _shared(entries):
            console.print(f"  [bold]{esc(who)}[/] [dim]{f.detector}[/]  {esc(message)}", highlight=False)
            console.print(f"    [dim]{esc(_path(list(f.evidence.get('path', []))))}[/]", highlight=False)
            if severity is not Severity.INFO:
                console.print(f"    call {esc(whom_to_call(report.closure, f))}: "
                              f"{WHAT_TO_DO.get(f.detector, DEFAULT_STEP)}", highlight=False)

    accepted = [(r, f, a) for r in result.models for f, a in r.accepted]
    if accepted:
        console.print()
        console.print(Text(f"Acknowledged, not scored ({len(accepted)})", style="dim"))
        for report, f, a in accepted:
            console.print(f"  [bold]{esc(report.closure.model.name)}[/] [dim]{f.detector}[/]  {esc(f.message)}",
                          highlight=False)
            console.print(f"    [dim]{esc(a.by)} until {iso_instant(a.until_ms)}: {esc(a.reason)} ({esc(a.id)})[/]",
                          highlight=False)

    if result.ignored_acks:
        console.print()
        console.print(Text(f"Acknowledgements ignored ({len(result.ignored_acks)}): their findings count",
                           style="yellow"))
        for i in result.ignored_acks:
            console.print(f"  {esc(i.ack.id)} [dim]{esc(i.ack.detector)} on {esc(display_name(i.ack.subject))} by "
                          f"{esc(i.ack.by)}[/]: {esc(i.why)}", highlight=False)

    if result.blast_radius:
        console.print()
        console.print(Text("Blast radius", style="bold"))
        radius = narrow_table(("dataset", "name"), ("at risk from", "name"), ("production models", "name"),
                              ("live", "number"))
        for b in result.blast_radius:
            radius.add_row(
                Text(shown(display_name(b.dataset))),
                Text(shown(", ".join(b.flagged_by))),
                Text(shown(", ".join(display_name(m) for m in b.models) or "-")),
                str(b.deployments),
            )
        console.print(radius)

    failing = result.failing
    console.print()
    if failing:
        console.print(
            f"[bold red]{len(failing)} model(s) at or above the fail tier {scoring.fail_tier}:[/] "
            + esc(", ".join(m.closure.model.name for m in failing))
        )
    else:
        console.print(f"[green]No model reaches the fail tier {scoring.fail_tier}.[/]")


def _model_row(table: Table, report: ModelReport, label: Text, scoring: ScoringConfig, bar: bool) -> None:
    style = _TIER_STYLE.get(report.score.tier, "white")
    counts = list(count_by_severity(report.findings).values())
    table.add_row(
        label,
        "yes" if report.closure.production else "no",
        Text(report.score.tier, style=style),
        str(report.score.value),
        *([_bar(report.score.value, scoring.max_score, style)] if bar else []),
        str(len(report.closure.live_deployments)),
        "/".join(map(str, counts)),
    )
