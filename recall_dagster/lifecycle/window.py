"""The blind window: when the data was bad, bounded by what the test's run history can prove.

A passing run certifies the data at its instant and a failing run condemns
it, so the corruption began after the last passing run and at or before the
first failing one, and ended after the last failing run and at or before the
first passing one after it.  A materialised table's content changes only when
it is written, so recorded writes tighten both bounds: the corruption cannot
predate the first write after the last pass, nor outlast the last write before
the heal.  A stamp of the newest change alone (the platform's ``lastModified``)
says when the last write was, not that it was the only one: falling after the
last pass it marks the *likely* onset, which leaves a version trained before it
SUSPECT rather than clean.  Runs without a time bound nothing and are counted
instead; a run that errored (the test could not run) neither passes nor fails.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from recall_dagster.contracts import lifecycle as contracts
from recall_dagster.lifecycle.records import AssertionRun
from recall_dagster.instants import iso_instant

PASSING = "SUCCESS"


@dataclass(frozen=True)
class BlindWindow:
    """One streak of failing runs.  ``None`` bounds are unknown (``onset_ms``) or still open (``end_ms``)."""

    began_after_ms: int | None  # the last passing run before the streak; None: no pass recorded before it
    began_by_ms: int | None  # the first failing run; None when no failing run carries a time
    onset_ms: int | None  # earliest the corruption can have landed; None: unbounded
    last_failed_ms: int | None
    ended_by_ms: int | None  # the first passing run after the streak; None while it still fails
    end_ms: int | None  # latest the corruption can have lasted; None while open
    untimed_runs: int = 0  # runs of this assertion that carry no time and bound nothing
    likely_onset_ms: int | None = None  # the newest change stamped after the last pass: the bad rows most likely

    @property
    def open(self) -> bool:
        return self.ended_by_ms is None

    def contract(self) -> contracts.Window:
        def at(ms: int | None) -> str | None:
            return iso_instant(ms) if ms is not None else None

        return contracts.Window(
            began_after=at(self.began_after_ms),
            began_by=at(self.began_by_ms),
            onset=at(self.onset_ms),
            last_failed=at(self.last_failed_ms),
            ended_by=at(self.ended_by_ms),
            end=at(self.end_ms),
            open=self.open,
            untimed_runs=self.untimed_runs,
            likely_onset=at(self.likely_onset_ms),
        )


def blind_windows(
    runs: Sequence[AssertionRun],
    failing: Callable[[str | None], bool],
    writes_ms: Sequence[int] = (),
    last_change_ms: int | None = None,
) -> tuple[BlindWindow, ...]:
    """Every failing streak in the history, oldest first.

    An assertion whose failing runs all lack a time still yields one window,
    with every bound unknown, so nothing judged against it can pass as clean.
    """
    timed = sorted((r for r in runs if r.at_ms is not None and r.result is not None), key=lambda r: r.at_ms or 0)
    untimed = sum(1 for r in runs if r.at_ms is None)
    windows: list[BlindWindow] = []
    last_pass: int | None = None
    streak: list[int] = []
    for run in timed:
        at = run.at_ms or 0
        if failing(run.result):
            streak.append(at)
        elif run.result == PASSING:
            if streak:
                windows.append(_window(last_pass, streak, at, writes_ms, last_change_ms, untimed))
                streak = []
            last_pass = at
    if streak:
        windows.append(_window(last_pass, streak, None, writes_ms, last_change_ms, untimed))
    if not windows and any(failing(r.result) for r in runs if r.at_ms is None):
        windows.append(BlindWindow(None, None, None, None, None, None, untimed))
    return tuple(windows)


def _window(
    last_pass: int | None, streak: list[int], healed: int | None, writes_ms: Sequence[int],
    last_change_ms: int | None, untimed: int,
) -> BlindWindow:
    first, last = streak[0], streak[-1]
    onset: int | None = None
    likely: int | None = None
    if last_pass is not None:
        landed = [w for w in writes_ms if last_pass < w <= first]
        onset = min(landed) if landed else last_pass
        if not landed and last_change_ms is not None and last_pass < last_change_ms <= first:
            likely = last_change_ms
    end: int | None = None
    if healed is not None:  # the newest change stamped is the last write, whatever came before it
        stamped = (last_change_ms,) if last_change_ms is not None else ()
        cleaned = [w for w in (*writes_ms, *stamped) if last < w <= healed]
        end = max(cleaned) if cleaned else healed
    return BlindWindow(last_pass, first, onset, last, healed, end, untimed, likely)


def hull(windows: Sequence[BlindWindow]) -> BlindWindow | None:
    """The smallest window holding every given one: what one incident spanning several tests reports."""
    if not windows:
        return None

    def lowest(values: list[int | None]) -> int | None:
        return None if any(v is None for v in values) else min(v for v in values if v is not None)

    def highest(values: list[int | None]) -> int | None:
        return None if any(v is None for v in values) else max(v for v in values if v is not None)

    known_first = [w.began_by_ms for w in windows if w.began_by_ms is not None]
    known_last = [w.last_failed_ms for w in windows if w.last_failed_ms is not None]
    return BlindWindow(
        began_after_ms=lowest([w.began_after_ms for w in windows]),
        began_by_ms=min(known_first) if known_first else None,
        onset_ms=lowest([w.onset_ms for w in windows]),
        last_failed_ms=max(known_last) if known_last else None,
        ended_by_ms=highest([w.ended_by_ms for w in windows]),
        end_ms=highest([w.end_ms for w in windows]),
        untimed_runs=max(w.untimed_runs for w in windows),
        likely_onset_ms=lowest([w.likely_onset_ms for w in windows]),
    )
