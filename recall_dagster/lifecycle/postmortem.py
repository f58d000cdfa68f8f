"""The postmortem Recall writes itself when a data incident resolves.

Built from the ledger entry (when Recall raised, updated and resolved it, and
the blast radius as it stood while the tests failed) and the root cause as the
graph shows it at resolution (the closed blind window, the verdict on every
version).  Pure: the same inputs give
the same text, so a re-run rewrites nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

from recall_dagster.drawn import md_escaped
from recall_dagster.estate import display_name
from recall_dagster.lifecycle.assess import RootCause
from recall_dagster.lifecycle.blast import describe
from recall_dagster.lifecycle.config import LifecycleConfig
from recall_dagster.lifecycle.incidents import IncidentEntry
from recall_dagster.estate.measures import weight_text
from recall_dagster.lifecycle.verdict import Status, VersionVerdict, judge
from recall_dagster.instants import iso_instant


@dataclass(frozen=True)
class Postmortem:
    title: str
    text: str  # markdown
    data: dict[str, Any]  # the same facts as JSON, for the evidence folder


def _span(ms: int | None) -> str | None:
    if ms is None:
        return None
    minutes, seconds = divmod(max(ms, 0) // 1000, 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    parts = [f"{n}{unit}" for n, unit in ((days, "d"), (hours, "h"), (minutes, "m")) if n] + [f"{seconds}s"]
    return " ".join(parts[:3])


def _between(later: int | None, earlier: int | None) -> int | None:
    return later - earlier if later is not None and earlier is not None else None


def contaminated(cause: RootCause | None) -> list[VersionVerdict]:
    """Versions trained inside this incident's window (each test's latest streak), newest first.

    The root cause's own verdicts weigh every streak in the history; a
    postmortem is about one incident, so earlier streaks are left to theirs.
    """
    if cause is None:
        return []
    latest = cause.latest_windows
    found = []
    for model in cause.models:
        for v in model.versions:
            impact = cause.blast.impact_on(v.model)
            verdict = judge(v.spans, latest, v.poisoned_inputs, impact.suspect_reason if impact else None)
            if verdict.status is Status.CONTAMINATED:
                found.append(replace(v, verdict=verdict))
    return found


def classify(
    cause: RootCause | None, blast: Mapping[str, Any], bad: Sequence[VersionVerdict], config: LifecycleConfig
) -> dict[str, Any]:
    """What kind of failure it was, and how far into the ML estate it reached (``blast`` as it stood while failing)."""
    modes = sorted({config.classify(r.kind) for r in cause.records}) if cause else [config.default_classification]
    if bad:
        impact = "contaminated-training"
    elif any(m["live_deployments"] for m in blast.get("models", ())):
        impact = "served-poisoned-data"
    elif blast.get("models"):
        impact = "no-live-impact"
    else:
        impact = "no-ml-impact"
    return {"failure_modes": modes, "impact": impact}


def _timeline(entry: IncidentEntry, cause: RootCause | None, bad: Sequence[VersionVerdict]) -> list[tuple[int, str]]:
    rows: list[tuple[int, str]] = []
    window = cause.window if cause else None
    if window is not None:
        tests = ", ".join(r.name for r in cause.records) if cause else ""
        marks = (
            (window.began_after_ms, f"last passing run of {tests}"),
            (window.onset_ms, "earliest the corruption can have landed"),
            (window.began_by_ms, "first failing run: the test turns red"),
            (window.end_ms, "latest the corruption can have lasted"),
            (window.ended_by_ms, "first passing run again: the data is healthy"),
        )
        rows += [(at, what) for at, what in marks if at is not None]
    rows += [
        (v.span.end_ms, f"{v.name} finished training inside the blind window")
        for v in bad
        if v.span and v.span.end_ms is not None
    ]
    rows += [(int(t["at_ms"]), f"Recall {t['event']} the incident: {t['detail']}") for t in entry.timeline]
    return sorted(rows, key=lambda r: r[0])


def _failing_tests(cause: RootCause | None) -> list[str]:
    """A line per failing test of the root cause, with how much it failed on where that is known."""
    if not cause:
        return []
    return [
        f"- {md_escaped(r.name)} on {md_escaped(r.where)}"
        + (f": {md_escaped(weight)}" if (weight := weight_text(cause.failed_rows.get(r.urn),
                                                               cause.measured.get(r.urn))) else "")
        for r in cause.records
    ]


def postmortem(entry: IncidentEntry, cause: RootCause | None, config: LifecycleConfig) -> Postmortem:
    window = cause.window if cause else None
    began_by = window.began_by_ms if window else None
    durations = {
        "time_to_detect": _between(began_by, window.onset_ms if window else None),
        "time_to_raise": _between(entry.raised_at_ms, began_by),
        "time_to_heal": _between(window.ended_by_ms if window else None, began_by),
        "time_to_resolve": _between(entry.resolved_at_ms, entry.raised_at_ms),
    }
    bad = contaminated(cause)
    classification = classify(cause, entry.snapshot.get("blast_radius", {}), bad, config)
    origins = ", ".join(display_name(o[0]) + "." + o[1] for o in entry.origins)
    title = f"Postmortem: {' / '.join(classification['failure_modes'])} failure at {origins}"
    timeline = _timeline(entry, cause, bad)
    lines = [
        f"# {md_escaped(title)}",
        "",
        f"Incident {md_escaped(entry.urn)}, raised {iso_instant(entry.raised_at_ms)}"
        + (f", resolved {iso_instant(entry.resolved_at_ms)}." if entry.resolved_at_ms is not None else "."),
        f"Classification: {', '.join(classification['failure_modes'])}; impact {classification['impact']}.",
        "",
        "## Timeline",
        *(f"- {iso_instant(at)}: {md_escaped(what)}" for at, what in timeline),
        "",
        "## Durations",
        f"- Time to detect (corruption to failing test, at most): {_span(durations['time_to_detect']) or 'unknown'}",
        f"- Time to raise (failing test to incident): {_span(durations['time_to_raise']) or 'unknown'}",
        f"- Time to heal (failing test to passing test): {_span(durations['time_to_heal']) or 'unknown'}",
        f"- Time to resolve (incident open): {_span(durations['time_to_resolve']) or 'unknown'}",
        "",
        "## Failing tests",
        *_failing_tests(cause),
        "",
        "## Blast radius",
        f"Origin columns: {md_escaped(origins)}.",
        *(f"- {md_escaped(line)}" for line in describe(entry.snapshot)),
        "",
        "## Contaminated versions",
        *(f"- {md_escaped(v.name)}: {md_escaped(v.verdict.reason)}" for v in bad),
        *(["- none: no version was trained while the data was bad"] if not bad else []),
        *(f"- {md_escaped(m.name)}: {md_escaped(m.rollback_note)}" for m in (cause.models if cause else ())),
        "",
        "_Written by Recall when the incident resolved itself; the ledger entry and this text are in "
        "RECALL_HOME/evidence/postmortems/._",
    ]
    data = {
        "incident": entry.urn,
        "title": title,
        "raised_at": iso_instant(entry.raised_at_ms),
        "resolved_at": iso_instant(entry.resolved_at_ms) if entry.resolved_at_ms is not None else None,
        "classification": classification,
        "durations_ms": durations,
        "timeline": [{"at": iso_instant(at), "what": what} for at, what in timeline],
        "contaminated_versions": [v.contract().as_json() for v in bad],
        "root_cause": dict(entry.snapshot),
    }
    return Postmortem(title=title, text="\n".join(lines) + "\n", data=data)
