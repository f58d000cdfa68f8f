"""Ranked explanations of a regression, each score a weighted sum a reader can redo from what it shows.

Every hypothesis in the catalogue is backed by the clue kinds that could
reveal it.  Its score is built from five signals over its supporting clues
(did they happen between the two trainings, how close to the model do they
sit, how many features do they touch, how much of the drop did a replay
reproduce, how many agree), minus a fixed penalty per clue against it, so the
report can show why one cause outranks another instead of asserting it.
``no_data_cause`` is always listed and grows as every other explanation
weakens: "nothing in the data explains this" is an answer, not a silence.
When the best explanation is weak or barely ahead, :func:`decide` abstains.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Literal, Sequence

from recall_dagster.contracts import records as contract
from recall_dagster.diagnose.config import HypothesisConfig, Signal as SignalName
from recall_dagster.diagnose.facts import Clue, Facts, RunFacts
from recall_dagster.instants import iso_instant

Decision = Literal["REGRESSION", "INCONCLUSIVE"]

NO_DATA_CAUSE = "no_data_cause"
# Hypothesis kind -> the clue kinds that support it, in the order the report lists them.
SUPPORT: dict[str, tuple[str, ...]] = {
    "upstream_data_quality": ("assertion_failed", "contaminated", "rows_changed", "profile_shifted"),
    "schema_change": ("schema_changed",),
    "feature_transformation": ("transform_changed", "code_changed"),
    "stale_input": ("input_stale",),
    "training_serving_skew": ("serving_skew",),
    "parameter_change": ("param_changed", "features_changed"),
    "label_change": ("label_shift",),
}
CATALOGUE = (*SUPPORT, NO_DATA_CAUSE)
# A recovered assertion only ever argues against bad upstream data; it never supports anything.
_COUNTER_ONLY = {"assertion_recovered": "upstream_data_quality"}
_HYPOTHESIS_OF = {clue_kind: kind for kind, kinds in SUPPORT.items() for clue_kind in kinds} | _COUNTER_ONLY
# Clue kinds that exist only because the two runs differ, so an unknown time still falls between them.
_BETWEEN_BY_CONSTRUCTION = frozenset({
    "transform_changed", "code_changed", "param_changed", "features_changed", "schema_changed", "label_shift",
    "rows_changed", "profile_shifted",
})
_LINEAGE = {"feature": 1.0, "input": 0.6, "upstream": 0.3, "none": 0.0}
_LINEAGE_WHY = {
    "feature": "on a column a feature reads",
    "input": "on a table training reads",
    "upstream": "upstream of what training reads",
    "none": "nowhere the model reads",
}


@dataclass(frozen=True)
class Signal:
    name: str
    value: float  # in [0, 1]
    weight: float
    why: str

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value, "weight": self.weight, "why": self.why}


@dataclass(frozen=True)
class Hypothesis:
    kind: str
    score: float  # clip(sum(weight * value) - counter_penalty * len(counter), 0, 1)
    signals: tuple[Signal, ...]
    evidence: tuple[Clue, ...]
    counter: tuple[Clue, ...]

    def contract(self) -> contract.Hypothesis:
        """The hypothesis as a diagnosis names it, its score rounded as it is shown."""
        return contract.Hypothesis(
            kind=self.kind,
            score=round(self.score, 3),
            signals=[signal.to_json() for signal in self.signals],
            evidence=[clue.to_json() for clue in self.evidence],
            counter=[clue.to_json() for clue in self.counter],
        )


def _distinct(clues: Sequence[Clue]) -> tuple[Clue, ...]:
    """Clues in order without repeats; by equality, since a clue's ``data`` mapping makes it unhashable."""
    out: list[Clue] = []
    for clue in clues:
        if clue not in out:
            out.append(clue)
    return tuple(out)


def _named(clue: Clue) -> str:
    return f"{clue.kind} on {clue.subject}"


def _clip(value: float) -> float:
    return min(1.0, max(0.0, value))


def _moment(clue: Clue, baseline: RunFacts, candidate: RunFacts) -> tuple[float, str]:
    """How well one clue's time fits a cause of this drop: between the trainings, and late in that gap, fits best."""
    if clue.at_ms is None:
        if clue.kind in _BETWEEN_BY_CONSTRUCTION:
            return 1.0, f"{_named(clue)} is a difference between the two runs, so it lies between them"
        return 0.5, f"{_named(clue)} has no known time"
    since = baseline.end_ms if baseline.end_ms is not None else baseline.start_ms
    until = candidate.start_ms
    if since is None or until is None:
        return 0.5, f"{_named(clue)} cannot be placed: the runs' training times are not recorded"
    at = iso_instant(clue.at_ms)
    if clue.at_ms > until:
        return 0.0, f"{_named(clue)} at {at} came after the candidate started training"
    if clue.at_ms < since:
        return 0.2, f"{_named(clue)} at {at} came before the baseline trained"
    share = (clue.at_ms - since) / (until - since) if until > since else 1.0
    return 0.5 + 0.5 * share, f"{_named(clue)} at {at} fell between the baseline's training and the candidate's"


def _temporal(facts: Facts, clues: Sequence[Clue], observed: float | None) -> tuple[float, str]:
    # max() keeps the first of equal values, so the sentence names the earliest-listed best clue.
    return max((_moment(clue, facts.baseline, facts.candidate) for clue in clues), key=lambda pair: pair[0])


def _lineage(facts: Facts, clues: Sequence[Clue], observed: float | None) -> tuple[float, str]:
    closest = max(clues, key=lambda clue: _LINEAGE[clue.relevance])
    return _LINEAGE[closest.relevance], f"{_named(closest)} sits {_LINEAGE_WHY[closest.relevance]}"


def _fields(facts: Facts, clues: Sequence[Clue], observed: float | None) -> tuple[float, str]:
    total = facts.total_features or len(facts.candidate.features)
    if not total:
        return 0.0, "the candidate records no features to touch"
    touched = sorted({name for clue in clues for name in clue.fields} & set(facts.candidate.features))
    named = f": {', '.join(touched)}" if touched else ""
    return min(1.0, len(touched) / total), f"the clues touch {len(touched)} of the model's {total} features{named}"


def _size(facts: Facts, clues: Sequence[Clue], observed: float | None) -> tuple[float, str]:
    measured = [(c.measured_loss, c) for c in clues if c.measured_loss is not None and math.isfinite(c.measured_loss)]
    if not measured:
        return 0.5, "no replay measured how much of the drop these clues cause"
    if observed is None or not observed > 0:
        return 0.5, "the gate saw no drop to compare the replayed loss with"
    loss, biggest = max(measured, key=lambda pair: pair[0])
    return _clip(loss / observed), f"replaying {_named(biggest)} lost {loss:.3g} of the {observed:.3g} observed"


def _corroboration(facts: Facts, clues: Sequence[Clue], observed: float | None) -> tuple[float, str]:
    count = len(clues)
    value = 0.0 if count == 1 else 0.5 if count == 2 else 1.0
    return value, f"{count} distinct clue{'s' if count > 1 else ''} point{'' if count > 1 else 's'} this way"


_SIGNALS: dict[SignalName, Callable[[Facts, Sequence[Clue], float | None], tuple[float, str]]] = {
    "temporal": _temporal,
    "lineage": _lineage,
    "fields": _fields,
    "size": _size,
    "corroboration": _corroboration,
}


def _hypothesis(kind: str, facts: Facts, observed: float | None, config: HypothesisConfig) -> Hypothesis | None:
    evidence = _distinct([c for c in facts.clues if not c.against and c.kind in SUPPORT[kind]])
    if not evidence:
        return None
    counter = _distinct([c for c in facts.clues if c.against and _HYPOTHESIS_OF.get(c.kind) == kind])
    signals = []
    for name, measure in _SIGNALS.items():
        value, why = measure(facts, evidence, observed)
        signals.append(Signal(name, value, config.weights.get(name, 0.0), why))
    total = sum(s.weight * s.value for s in signals) - config.counter_penalty * len(counter)
    return Hypothesis(kind, _clip(total), tuple(signals), evidence, counter)


def _no_data_cause(others: Sequence[Hypothesis]) -> Hypothesis:
    best = max(others, key=lambda h: h.score, default=None)
    value = 0.5 * (1.0 - (best.score if best else 0.0))
    why = (f"half of what the best other explanation, {best.kind} at {best.score:.3f}, leaves unexplained" if best
           else "no clue between the two runs points anywhere")
    return Hypothesis(NO_DATA_CAUSE, value, (Signal("absence", value, 1.0, why),), (), ())


def rank(facts: Facts, observed_loss: float | None, config: HypothesisConfig) -> tuple[Hypothesis, ...]:
    """Every hypothesis some clue supports, plus ``no_data_cause``; best first, equal scores in catalogue order."""
    listed = [h for kind in SUPPORT if (h := _hypothesis(kind, facts, observed_loss, config)) is not None]
    listed.append(_no_data_cause(listed))
    return tuple(sorted(listed, key=lambda h: (-h.score, CATALOGUE.index(h.kind))))


def _below(value: float, limit: float) -> bool:
    """Strictly below, ignoring float noise: scores are sums of weights, and 0.35 may arrive as 0.34999999999999998."""
    return value < limit and not math.isclose(value, limit, rel_tol=1e-9, abs_tol=1e-12)


def decide(ranked: Sequence[Hypothesis], config: HypothesisConfig) -> tuple[Decision, str]:
    """Name a cause only when the best is strong enough and clearly ahead; otherwise say so rather than guess."""
    if not ranked:
        return "INCONCLUSIVE", "no hypothesis was ranked"
    best = ranked[0]
    if _below(best.score, config.floor):
        return "INCONCLUSIVE", (f"the best hypothesis, {best.kind} ({best.score:.3f}), "
                                f"scores below the floor {config.floor:g}")
    if len(ranked) > 1 and _below(best.score - ranked[1].score, config.margin):
        second = ranked[1]
        return "INCONCLUSIVE", (f"{best.kind} ({best.score:.3f}) and {second.kind} ({second.score:.3f}) "
                                f"are closer than the margin {config.margin:g}")
    return "REGRESSION", f"{best.kind} explains the regression best ({best.score:.3f})"
