"""A dataset in the closure has not changed for longer than its freshness window.

Windows are per dataset in ``recall.yaml`` (default seven days).  A dataset
whose freshness nobody records is not reported: unknown is not stale.  Time is
the scan's instant (``closure.scanned_at_ms``), so ``--as-of`` replays the past.
"""

from __future__ import annotations

from recall_dagster.detect.config import RecallConfig
from recall_dagster.detect.finding import Finding, finding
from recall_dagster.detect.state import DetectorState
from recall_dagster.estate import Dataset, Freshness, ModelClosure

NAME = "upstream_staleness"
CASES = ("stale",)
# Judged at the scan's instant: rerun on every scan, never reused from the last one (recall_dagster.verdicts).
VOLATILE = True
_HOUR_MS = 3_600_000


def _span(hours: float) -> str:
    return f"{hours / 24:.1f} days" if hours >= 48 else f"{hours:.1f} hours"


def _overdue(dataset: Dataset, instant_ms: int, config: RecallConfig) -> tuple[Freshness, float, float] | None:
    """(its last change, age in hours, window in hours) when ``dataset`` is past its window at the instant."""
    fresh = None if dataset.missing else dataset.freshness_at(instant_ms)
    if fresh is None:
        return None
    window = config.freshness.window_hours(dataset)
    age = (instant_ms - fresh.updated_ms) / _HOUR_MS
    return (fresh, age, window) if age > window else None


def detect(closure: ModelClosure, config: RecallConfig, state: DetectorState) -> list[Finding]:
    findings: list[Finding] = []
    instant = closure.scanned_at_ms
    judged = state.memo.judgements((NAME, instant), config)
    judge = lambda dataset: _overdue(dataset, instant, config)  # noqa: E731
    for urn, dataset, (fresh, age, window) in sorted(judged.over(closure.datasets, judge), key=lambda item: item[0]):
        findings.append(
            finding(
                closure,
                NAME,
                config.severity(NAME, "stale"),
                urn,
                f"{dataset.name} last changed {_span(age)} ago, past its {_span(window)} window "
                f"(per its {fresh.source})",
                cause=urn,
                last_updated_ms=fresh.updated_ms,
                age_hours=round(age, 1),
                window_hours=window,
                freshness_source=fresh.source,
            )
        )
    return findings


def identity(f: Finding) -> dict[str, object]:
    """The outage, not its age: the same last change (growing older) is the same staleness."""
    return {k: f.evidence.get(k) for k in ("last_updated_ms", "freshness_source")}
