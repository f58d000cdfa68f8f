"""How bad something is: one ladder for all of Recall, and the other scales named onto it.

A finding's CRITICAL, an incident band's CRITICAL or HIGH and an impact
verdict's BLOCK are told to different readers in their own words, but they are
compared, thresholded and ranked on one ladder: CRITICAL over WARN over INFO.
A :class:`Scale` is such a set of words, most serious first, each mapped onto
the ladder: the lifecycle's incident bands (``lifecycle.severity.ladder`` in
``recall.yaml``), the impact verdicts (``impact.measured.block_severity`` and
``pass_severity``). Score tiers are not severities: they are bands of a score.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Severity(str, Enum):
    """The ladder."""

    CRITICAL = "CRITICAL"
    WARN = "WARN"
    INFO = "INFO"

    @property
    def rank(self) -> int:
        """0 for the most serious, so sorting by rank puts it first."""
        return _RANK[self]

    def at_least(self, other: "Severity") -> bool:
        return self.rank <= other.rank


_RANK = {Severity.CRITICAL: 0, Severity.WARN: 1, Severity.INFO: 2}


@dataclass(frozen=True)
class Scale:
    """A part of Recall's own words for how bad, most serious first, each word on the ladder."""

    name: str  # what the words grade, for messages ("incident band")
    levels: tuple[tuple[str, Severity], ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.levels)

    def rank(self, level: str) -> int:
        """0 for the most serious word, so ``min`` by rank picks the loudest."""
        return self.names.index(level)

    def on_ladder(self, level: str) -> Severity:
        """Where ``level`` stands on the one ladder, to compare it with any finding or threshold."""
        return dict(self.levels)[level]
