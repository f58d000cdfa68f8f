"""How long a verdict that reads the scan's instant stays what it is.

A detector that reads the instant (``Reads.INSTANT``) finds the same in an unchanged
closure at every instant until something dated between the two instants turns
up: a test run (failing assertions), a record of a change or a table's window
running out (staleness), a profile (profile drift).  Each such detector says,
next to its verdict, the first later instant at which it may differ
(``holds``); a rescan of the same closure under the same config before that
instant keeps the verdict instead of judging again.  Findings that carry the
instant itself (a stale table's age) are redrawn at the new instant by the
detector's ``restamp``.  A test compares every kept verdict with a judgement
made afresh at the later instant.
"""

from __future__ import annotations

from typing import Iterable, NamedTuple

from recall_dagster.detect.finding import Finding


class Timed(NamedTuple):
    """A volatile detector's verdict on one closure: what it found at ``judged_at_ms``, holding at every instant
    from then until ``until_ms`` (exclusive; None: at every later one) while the closure and config are the same.

    A tuple rebuilt by ``tuple.__new__`` (:meth:`__reduce__`): a rescan of 10,000 models loads 30,000 of them
    with the kept verdicts, and the dataclass took twice as long."""

    judged_at_ms: int
    until_ms: int | None
    findings: tuple[Finding, ...]

    def holds_at(self, at_ms: int) -> bool:
        return self.judged_at_ms <= at_ms and (self.until_ms is None or at_ms < self.until_ms)

    def __reduce__(self) -> tuple:
        return tuple.__new__, (type(self), tuple(self))


def first_after(at_ms: int, instants: Iterable[int | None]) -> int | None:
    """The earliest of ``instants`` after ``at_ms``; None when there is none."""
    return earliest(ms for ms in instants if ms is not None and ms > at_ms)


def earliest(instants: Iterable[int | None]) -> int | None:
    """The earliest of ``instants``, None standing for never."""
    return min((ms for ms in instants if ms is not None), default=None)
