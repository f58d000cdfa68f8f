"""A dataset in the closure has not changed for longer than its freshness window.

Windows are per dataset in ``recall.yaml`` (default seven days); a table is
judged by the one rule of :mod:`recall_dagster.detect.freshness` (its newest
record among its descriptions, its strictest window), as the gate judges it.  A
dataset whose freshness nobody records is not reported: unknown is not stale.  Time is
the scan's instant (``closure.scanned_at_ms``), so ``--as-of`` replays the past.
"""

from __future__ import annotations

from recall_dagster.detect.config import RecallConfig
from recall_dagster.detect.finding import Finding, finding
from recall_dagster.detect.freshness import Own, TableFreshness, combine, own
from recall_dagster.detect.state import DetectorState
from recall_dagster.estate import Dataset, Freshness, ModelClosure

NAME = "upstream_staleness"
CASES = ("stale",)
# Judged at the scan's instant: rerun on every scan, never reused from the last one (recall_dagster.verdicts).
VOLATILE = True


def _span(hours: float) -> str:
    return f"{hours / 24:.1f} days" if hours >= 48 else f"{hours:.1f} hours"


def _per(last: Freshness, on: Dataset | None, urn: str) -> str:
    return f"its {last.source}" if on is None or on.urn == urn else f"the {last.source} of {on.name}"


def detect(closure: ModelClosure, config: RecallConfig, state: DetectorState) -> list[Finding]:
    """Each description of a stale table that records its freshness itself (one that records nothing is
    not blamed for a twin's record), judged by the table's rule (:mod:`recall_dagster.detect.freshness`)."""
    instant = closure.scanned_at_ms
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
                    f"{o.dataset.name} last changed {_span(age)} ago, past its "
                    f"{_span(table.window_hours)} window (per {_per(last, table.recorded_on, urn)}){rerun}",
                    cause=urn,
                    last_updated_ms=last.updated_ms,
                    age_hours=round(age, 1),
                    window_hours=table.window_hours,
                    freshness_source=last.source,
                    **({"written_by": writers} if writers else {}),
                )
            )
    return sorted(findings, key=lambda f: f.subject)


def identity(f: Finding) -> dict[str, object]:
    """The outage, not its age: the same last change (growing older) is the same staleness."""
    return {k: f.evidence.get(k) for k in ("last_updated_ms", "freshness_source")}
