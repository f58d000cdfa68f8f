"""The metric gate: is the candidate worse than its baseline by more than ``recall.yaml`` tolerates?

Diagnosis only looks for a cause once a drop is real, so the gate is pure and
strict about what it can compare: a metric only one run logged (or logged as
NaN) is shown but never regresses, and when no configured metric was logged by
both runs the verdict is UNVERIFIED, never PASS, because a gate that compared
nothing must not say the candidate is fine.  The primary metric's loss is
expressed as a share of the baseline's skill (ROC AUC above chance, an error
relative to its own size), the same scale the impact tests measure replays on,
so a hypothesis's measured loss can be set against it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, Mapping

from recall_dagster.contracts import records as contract
from recall_dagster.diagnose.config import DiagnoseConfig, Tolerance
from recall_dagster.impact.measure import CHANCE

GateVerdict = Literal["PASS", "REGRESSION", "UNVERIFIED"]


@dataclass(frozen=True)
class MetricRow:
    """One configured metric as both runs logged it; ``delta`` is candidate minus baseline."""

    name: str
    baseline: float | None
    candidate: float | None
    delta: float | None
    tolerance: Tolerance
    regressed: bool
    note: str

    def contract(self) -> contract.MetricRow:
        """The row as a diagnosis's gate names it."""
        return contract.MetricRow(
            name=self.name,
            baseline=self.baseline,
            candidate=self.candidate,
            delta=self.delta,
            tolerance=self.tolerance.model_dump(),
            regressed=self.regressed,
            note=self.note,
        )


@dataclass(frozen=True)
class MetricGateOutcome:
    """The verdict, every row behind it, and the primary metric's relative loss (positive: worse).

    The primary is the regressed metric that lost the largest share of its
    skill (``diagnose.primary``'s order breaks ties), else the first of
    ``diagnose.primary`` both logged: the drop a hypothesis has to explain, and a
    repair has to win back, is the biggest one the gate saw.
    """

    verdict: GateVerdict
    rows: tuple[MetricRow, ...]
    primary: str | None
    loss: float | None
    reason: str

    def contract(self) -> contract.MetricGate:
        """The gate as a diagnosis names it."""
        return contract.MetricGate(
            verdict=self.verdict,
            metrics=[row.contract() for row in self.rows],
            primary=self.primary,
            loss=self.loss,
            reason=self.reason,
        )


def _value(metrics: Mapping[str, float], name: str) -> float | None:
    """A metric's value, None when it is absent or not finite: NaN or inf would make every comparison lie."""
    raw = metrics.get(name)
    if raw is None:
        return None
    value = float(raw)
    return value if math.isfinite(value) else None


def _side(metrics: Mapping[str, float], name: str, who: str) -> str:
    if name not in metrics:
        return f"the {who} did not log it"
    if _value(metrics, name) is None:
        return f"the {who} logged {metrics[name]}, which counts as not logged"
    return f"the {who} logged {metrics[name]:g}"


def _worse(tolerance: Tolerance, delta: float) -> float:
    """How much worse the candidate is, whichever way the metric points: positive means worse."""
    return -delta if tolerance.higher_is_better else delta


def _allowed(tolerance: Tolerance, baseline: float) -> float:
    return tolerance.tolerance * abs(baseline) if tolerance.relative else tolerance.tolerance


def _beyond(worse: float, allowed: float) -> bool:
    """Strictly beyond, ignoring float noise: a drop of exactly the tolerance (0.800 - 0.798) is allowed."""
    return worse > allowed and not math.isclose(worse, allowed, rel_tol=1e-9, abs_tol=1e-12)


def _row(name: str, tolerance: Tolerance, candidate: Mapping[str, float], baseline: Mapping[str, float]) -> MetricRow:
    base, cand = _value(baseline, name), _value(candidate, name)
    if base is None or cand is None:
        note = f"not compared: {_side(baseline, name, 'baseline')}; {_side(candidate, name, 'candidate')}"
        return MetricRow(name, base, cand, None, tolerance, False, note)
    worse, allowed = _worse(tolerance, cand - base), _allowed(tolerance, base)
    regressed = _beyond(worse, allowed)
    limit = f"{tolerance.tolerance:g} of the baseline = {allowed:.4g}" if tolerance.relative else f"{allowed:g}"
    if worse > 0:
        note = f"worse by {worse:.4g}, {'beyond' if regressed else 'within'} the tolerance {limit}"
    else:
        note = f"not worse ({'better' if worse < 0 else 'unchanged'}); tolerance {limit}"
    return MetricRow(name, base, cand, cand - base, tolerance, regressed, note)


def _loss(row: MetricRow) -> float | None:
    """The drop as a share of the baseline's skill, so ROC AUC 0.60 -> 0.55 reads as the half it is; None uncompared."""
    if row.baseline is None or row.delta is None:
        return None
    worse = _worse(row.tolerance, row.delta)
    reference = abs(row.baseline - CHANCE.get(row.name, 0.0))
    return worse / reference if reference else worse


def metric_gate(candidate: Mapping[str, float], baseline: Mapping[str, float], config: DiagnoseConfig) -> MetricGateOutcome:
    """Compare every configured metric both runs logged; the verdict and the primary's loss follow from the rows."""
    rows = tuple(
        _row(name, tol, candidate, baseline)
        for name, tol in config.metrics.items()
        if name in candidate or name in baseline
    )
    compared = {row.name: row for row in rows if row.delta is not None}
    if not compared:
        parts = [f"{row.name} ({row.note})" for row in rows]
        unseen = [name for name in config.metrics if name not in candidate and name not in baseline]
        if unseen:
            parts.append(f"neither run logged {', '.join(unseen)}")
        reason = f"no metric in diagnose.metrics was logged by both runs: {'; '.join(parts)}"
        return MetricGateOutcome("UNVERIFIED", rows, None, None, reason)
    regressed = [row for row in compared.values() if row.regressed]
    order = {name: i for i, name in enumerate(config.primary)}
    worst = max(regressed, key=lambda r: (_loss(r) or 0.0, -order.get(r.name, len(order))), default=None)
    primary = worst.name if worst else next((name for name in config.primary if name in compared), None)
    loss = _loss(compared[primary]) if primary is not None else None
    if regressed:
        reason = "; ".join(f"{row.name} {row.baseline:.4g} -> {row.candidate:.4g}, {row.note}" for row in regressed)
        return MetricGateOutcome("REGRESSION", rows, primary, loss, f"the candidate regressed: {reason}")
    names = ", ".join(compared)
    return MetricGateOutcome("PASS", rows, primary, loss, f"within tolerance on every compared metric: {names}")
