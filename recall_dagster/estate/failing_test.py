"""One verdict per (failing test, model): what the failure reaches and which of the model's inputs it froze.

The scan's ``failing_assertion`` detector and the retrain gate's ``failing_assertions`` check ask the same
question of the same closure; both read the answer here, so they call the same failures loud or quiet and say
why in the same words. Reach is :mod:`recall_dagster.estate.reach`'s rule, frozen inputs
:mod:`recall_dagster.estate.frozen`'s.
"""

from __future__ import annotations

from dataclasses import dataclass

from recall_dagster.estate.closure import ModelClosure
from recall_dagster.estate.columns import Col, ColumnGraph
from recall_dagster.estate.frozen import Frozen, frozen_inputs
from recall_dagster.estate.options import ReachOptions
from recall_dagster.estate.reach import Reach, reaches
from recall_dagster.estate.views import Assertion


@dataclass(frozen=True)
class FailingTest:
    """What one failing test does to one model (at least one part is set)."""

    reach: Reach | None  # None: its failure reaches nothing the model reads
    frozen: tuple[Frozen, ...]  # the model's inputs whose builds it stopped

    @property
    def quiet(self) -> bool:
        """Heard but never loud: reached only as a suspect, or only freezing the tables the model reads (it reads
        their last good build). At most WARN in the scan; a warning, not a refusal, in the gate."""
        return self.reach is None or self.reach.strength == "suspect"

    @property
    def notes(self) -> str:
        """What beyond the failure itself an engineer needs to hear, as clauses to append ("; ...")."""
        suspect = (f"; it reaches the model only as a suspect: {self.reach.why}"
                   if self.reach is not None and self.reach.strength == "suspect" else "")
        frozen = (f"; the builds below it were skipped: {', '.join(f.text for f in self.frozen)} "
                  f"{'keeps its' if len(self.frozen) == 1 else 'keep their'} last good build, which the model and "
                  "its next retrain read") if self.frozen else ""
        return suspect + frozen


def failing_test(closure: ModelClosure, graph: ColumnGraph, dataset: str, assertion: Assertion,
                 options: ReachOptions, passing: frozenset[Col], instant_ms: int) -> FailingTest | None:
    """The verdict on ``assertion`` (failing, on ``dataset``, as it stood at ``instant_ms``) for ``closure``'s
    model, over ``graph``; None when it neither reaches the model nor froze what it reads."""
    reach = reaches(closure, graph, dataset, assertion.column, options, passing)
    frozen = frozen_inputs(closure, dataset, assertion.since_ms, instant_ms) if assertion.since_ms is not None else ()
    if reach is None and not frozen:
        return None
    return FailingTest(reach, frozen)
