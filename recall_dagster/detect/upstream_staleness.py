"""A dataset in the closure has not changed for longer than its freshness window.

Windows are per dataset in ``recall.yaml`` (default seven days); a table is
judged by the one rule of :mod:`recall_dagster.detect.freshness` (its newest
record among its descriptions, its strictest window), as the gate judges it.  A
dataset whose freshness nobody records is not reported: unknown is not stale.  Time is
the scan's instant (``state.at_ms``), so ``--as-of`` replays the past.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Sequence

from recall_dagster.detect.config import ScanConfig
from recall_dagster.detect.finding import Finding, finding
from recall_dagster.detect.freshness import Own, TableFreshness, combine, own
from recall_dagster.detect.holds import earliest, first_after
from recall_dagster.detect.state import DetectorState
from recall_dagster.estate import Dataset, Freshness, ModelClosure
from recall_dagster.instants import HOUR_MS
from recall_dagster.detect.declared import Detector, Reads

NAME = "upstream_staleness"
CASES = ("stale",)
# Judged at the scan's instant: kept until a record of a change turns up or a fresh table's window runs out
# (holds), a stale table's age redrawn at each instant (restamp; recall_dagster.kept.verdicts).
_CHANGED = " last changed {} ago, past its {} window"  # the part of the message that reads the instant


def _span(hours: float) -> str:
    return f"{hours / 24:.1f} days" if hours >= 48 else f"{hours:.1f} hours"


def _per(last: Freshness, on: Dataset | None, urn: str) -> str:
    return f"its {last.source}" if on is None or on.urn == urn else f"the {last.source} of {on.name}"


def detect(closure: ModelClosure, config: ScanConfig, state: DetectorState) -> list[Finding]:
    """Each description of a stale table that records its freshness itself (one that records nothing is
    not blamed for a twin's record), judged by the table's rule (:mod:`recall_dagster.detect.freshness`)."""
    instant = state.at_ms
    lone = state.memo.judgements((NAME, instant), config)
    owns = state.memo.judgements((NAME, "own", instant), config)

    def stale_alone(dataset: Dataset) -> tuple[Own, TableFreshness] | None:
        said = own(dataset, instant, config.freshness)
        table = combine((said,), instant)
        return (said, table) if table.stale else None

    twins = closure.twins
    twinned = {d.urn for ds in twins.values() for d in ds} if twins else set()
    # most tables have one description: judged once per pass, whatever closures hold it; only the stale come back
    tables = [((said,), table) for urn, _, (said, table) in lone.over(closure.datasets, stale_alone)
              if urn not in twinned]
    for ds in twins.values():
        said = tuple(o for _, _, o in owns.over({d.urn: d for d in ds}, lambda d: own(d, instant, config.freshness)))
        tables.append((said, combine(said, instant)))
    findings: list[Finding] = []
    for said, table in tables:
        last, age = table.last, table.age_hours
        if not table.stale or last is None or age is None:
            continue
        # the jobs that write the table, whichever of its descriptions records them: what to rerun
        writers = sorted({w for o in said for w in o.dataset.written_by})
        rerun = f"; written by {', '.join(writers)}" if writers else ""
        written: dict[str, Any] = {"written_by": writers} if writers else {}  # evidence, beside the path
        for o in said:
            if o.last is None:
                continue
            urn = o.dataset.urn
            findings.append(
                finding(
                    closure,
                    NAME,
                    config.severity(NAME, "stale"),
                    urn,
                    o.dataset.name + _CHANGED.format(_span(age), _span(table.window_hours))
                    + f" (per {_per(last, table.recorded_on, urn)}){rerun}",
                    cause=urn,
                    last_updated_ms=last.updated_ms,
                    age_hours=round(age, 1),
                    window_hours=table.window_hours,
                    freshness_source=last.source,
                    **written,
                )
            )
    return sorted(findings, key=lambda f: f.subject)


def identity(f: Finding) -> dict[str, object]:
    """The outage, not its age: the same last change (growing older) is the same staleness."""
    return {k: f.evidence.get(k) for k in ("last_updated_ms", "freshness_source")}


def _next_record(dataset: Dataset, at_ms: int) -> int | None:
    """The first record of a change to ``dataset`` that becomes known after ``at_ms`` (an operation by when it
    was reported)."""
    return first_after(at_ms, (*(reported for reported, _ in dataset.operations_ms), *dataset.builds_ms,
                               dataset.last_modified_ms, dataset.property_updated_ms))


def _runs_out(table: TableFreshness) -> int | None:
    """The instant a fresh table's window runs out by (it is fresh before it); None for a stale table (it stays
    stale while nothing new is recorded) or one whose freshness nobody records."""
    if table.last is None or table.stale:
        return None
    return table.last.updated_ms + math.floor(table.window_hours * HOUR_MS)


def holds(closure: ModelClosure, config: ScanConfig, state: DetectorState) -> int | None:
    """Until a record of a change to one of the closure's datasets turns up after the instant, or the window of
    one of its fresh tables runs out (each description alone and each table its twins make, as :func:`detect`
    judges them): a stale table stays stale meanwhile, only older (:func:`restamp`)."""
    at = state.at_ms

    def turns(dataset: Dataset) -> int | None:  # the first of: a new record of it, its own window running out
        return earliest((_runs_out(combine((own(dataset, at, config.freshness),), at)), _next_record(dataset, at)))

    alone = state.memo.judgements((NAME, "turns", at), config).least(closure.datasets, turns)
    return earliest((alone, *(_runs_out(combine([own(d, at, config.freshness) for d in ds], at))
                              for ds in closure.twins.values())))


def restamp(findings: Sequence[Finding], judged_at_ms: int, at_ms: int) -> list[Finding] | None:
    """Findings judged at ``judged_at_ms`` as :func:`detect` gives them at ``at_ms``, while they hold: the same
    tables stale since the same change, each older by the time between; None if one is not in that shape."""
    out = []
    for f in findings:
        last, window = f.evidence.get("last_updated_ms"), f.evidence.get("window_hours")
        if not isinstance(last, int) or not isinstance(window, (int, float)):
            return None
        then, now = (judged_at_ms - last) / HOUR_MS, (at_ms - last) / HOUR_MS
        head, said, tail = f.message.partition(_CHANGED.format(_span(then), _span(window)))
        if not said:
            return None
        out.append(replace(f, message=head + _CHANGED.format(_span(now), _span(window)) + tail,
                           evidence={**f.evidence, "age_hours": round(now, 1)}))
    return out


DETECTOR = Detector(NAME, detect, CASES, Reads.INSTANT, identity=identity, holds=holds, restamp=restamp)
