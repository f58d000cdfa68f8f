"""The deterministic verdict on one measurement: PASS, WARN, BLOCK, or INCOMPLETE when it could not be made.

Order matters and is the whole policy: rows that fail inference block first
(production would error on them); then a loss of the primary metric past the
block line blocks only when its bootstrap interval lies wholly on the worse
side (a noisy drop warns instead); flips past the block line block; the warn
line warns.  A measurement with no metric (one class left, every row failed
without the failure line catching it) is INCOMPLETE rather than a guess.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from recall_dagster.impact.config import ImpactConfig

if TYPE_CHECKING:  # the verdict is judged on a measurement's numbers; the statistics themselves need numpy
    from recall_dagster.impact.measure import Measurement


class Verdict(str, Enum):
    PASS = "PASS"
    WARN = "WARN"
    BLOCK = "BLOCK"
    INCOMPLETE = "INCOMPLETE"

    @property
    def rank(self) -> int:
        """0 for the verdict that decides an experiment over the others."""
        return _RANK[self]


_RANK = {Verdict.BLOCK: 0, Verdict.INCOMPLETE: 1, Verdict.WARN: 2, Verdict.PASS: 3}


@dataclass(frozen=True)
class Judgement:
    verdict: Verdict
    reason: str


def worst(verdicts: list[Verdict]) -> Verdict:
    """BLOCK over INCOMPLETE over WARN over PASS; nothing measured passes."""
    return min(verdicts, key=lambda v: v.rank) if verdicts else Verdict.PASS


def _pct(share: float) -> str:
    return f"{share:.1%}"


def judge(m: Measurement, config: ImpactConfig) -> Judgement:
    block, warn = config.policy.block, config.policy.warn
    attempted = m.rows + m.failures
    failure_rate = m.failures / attempted if attempted else 0.0
    if m.failures and failure_rate > (block.failure_rate or 0.0):
        return Judgement(Verdict.BLOCK, f"{m.failures:,} of {attempted:,} rows failed inference ({_pct(failure_rate)})")
    if m.loss is None:
        return Judgement(Verdict.INCOMPLETE, f"{m.metric} could not be computed on the {m.rows:,} scored rows")
    change = f"{_pct(m.loss)} of its skill lost" if m.loss > 0 else "no loss"
    loss = f"{m.metric} {m.baseline:.4f} -> {m.mutated:.4f} ({change})"
    interval = f"{config.confidence:.0%} interval"
    if m.loss >= block.metric_loss and m.significant:
        return Judgement(Verdict.BLOCK, f"{loss}; significant: the {interval} of the delta excludes zero")
    if m.flip_rate >= block.flip_rate:
        return Judgement(Verdict.BLOCK, f"{_pct(m.flip_rate)} of predictions flip; {loss}")
    if m.loss >= block.metric_loss:
        return Judgement(Verdict.WARN, f"{loss}, but not significant: the {interval} of the delta includes zero")
    if m.loss >= warn.metric_loss or m.flip_rate >= warn.flip_rate:
        return Judgement(Verdict.WARN, f"{loss}; {_pct(m.flip_rate)} of predictions flip")
    return Judgement(Verdict.PASS, f"{loss}; {_pct(m.flip_rate)} of predictions flip")
