"""What a detector declares of itself, once and typed: its name, the severity cases it reads from recall.yaml,
and what it reads, which decides how long its verdict holds between scans.

A rescan keeps a verdict only while what it was judged on is unchanged, so a detector that reads more than it
declares would have a stale verdict kept; the declaration is checked when the detector's module is imported
(a detector that reads the closure only cannot say when its verdict turns: only one read at an instant can).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, Callable, Sequence

from recall_dagster.detect.config import ScanConfig
from recall_dagster.detect.finding import Finding
from recall_dagster.detect.state import DetectorState
from recall_dagster.estate import ModelClosure

DetectFn = Callable[[ModelClosure, ScanConfig, DetectorState], list[Finding]]
HoldsFn = Callable[[ModelClosure, ScanConfig, DetectorState], "int | None"]
RestampFn = Callable[[Sequence[Finding], int, int], "list[Finding] | None"]


class Reads(Enum):
    """What a detector's verdict rests on, besides the config."""

    CLOSURE = "closure"  # the closure only: its verdict holds while the closure is unchanged
    BASELINES = "baselines"  # the stored schema baselines too: it holds while they are the same
    INSTANT = "instant"  # the scan's instant: judged again once its verdict may have turned (``holds``)


@dataclass(frozen=True)
class Detector:
    name: str
    detect: DetectFn
    cases: tuple[str, ...]  # severity cases it reads from recall.yaml
    reads: Reads = Reads.CLOSURE
    identity: Callable[[Finding], Any] | None = None  # what identifies a finding's evidence, when not all of it
    # at an instant: the first later instant its verdict may differ at (:mod:`.holds`; None from it: none); a
    # detector that reads the instant without one is judged again at every other instant
    holds: HoldsFn | None = None
    # at an instant: redraws findings that carry it (judged at the first instant) at the second; None when it cannot
    restamp: RestampFn | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.reads, Reads):
            raise TypeError(f"detector {self.name}: reads is one of {', '.join(r.name for r in Reads)}")
        if not self.cases or not all(isinstance(c, str) for c in self.cases):
            raise TypeError(f"detector {self.name}: cases names the severity cases it reads from recall.yaml")
        if self.reads is not Reads.INSTANT and (self.holds is not None or self.restamp is not None):
            raise TypeError(f"detector {self.name}: only a detector that reads the instant says how long its "
                            "verdict holds or redraws it at another instant")

    @property
    def volatile(self) -> bool:
        """Judged at the scan's instant: judged again once its verdict may have turned."""
        return self.reads is Reads.INSTANT

    @property
    def reads_baselines(self) -> bool:
        """Reads the stored schema baselines: its verdict holds while they are the same."""
        return self.reads is Reads.BASELINES
