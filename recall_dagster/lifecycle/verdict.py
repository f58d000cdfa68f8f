"""Was a model version trained while its data was bad?  And which version is safe to roll back to?

A version is CONTAMINATED when its training overlapped a blind window on an
input the failure poisoned, CLEAN when it provably did not, and UNKNOWN when
the record cannot tell (no training run, a run without times, a window whose
onset no passing run bounds).  SUSPECT is what the record leaves likely but
unproven: a version the failure reaches only as a suspect
(:mod:`recall_dagster.estate.reach`), trained inside the window on data the
failing column may not have touched; or one trained after the last passing run
but before the table's newest change, when only a stamp of that change records
its writes (:mod:`recall_dagster.lifecycle.window`'s likely onset).  Unknown times are reasoned about, not guessed:
a run with only a start could have lasted into the window, a run with only an
end could have begun inside it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Sequence

from recall_dagster.contracts import lifecycle as contracts
from recall_dagster.estate import display_name
from recall_dagster.lifecycle.override import GateOverride
from recall_dagster.lifecycle.records import TrainingSpan, newest_run
from recall_dagster.lifecycle.trained_by import DagsterRun
from recall_dagster.lifecycle.window import BlindWindow
from recall_dagster.instants import iso_instant


class Status(str, Enum):
    CONTAMINATED = "CONTAMINATED"
    SUSPECT = "SUSPECT"
    UNKNOWN = "UNKNOWN"
    CLEAN = "CLEAN"


@dataclass(frozen=True)
class Verdict:
    status: Status
    reason: str


@dataclass(frozen=True)
class VersionVerdict:
    """One registered version of an affected model and what its training saw."""

    model: str  # mlModel URN
    name: str
    version: str | None
    verdict: Verdict
    spans: tuple[TrainingSpan, ...]  # every training run it records
    live_deployments: tuple[str, ...] = ()
    production: bool = False  # the registry marks it production (an alias, a stage): traffic goes where that points
    poisoned_inputs: tuple[str, ...] = ()  # "table.column" of each poisoned column it read
    gate_override: GateOverride | None = None  # trained past a refusing retrain gate, by whom and why
    trained_by: DagsterRun | None = None  # the Dagster run that trained it

    @property
    def serves(self) -> bool:
        """Whether it answers traffic now: a live deployment serves it, or the registry's production mark
        points at it (a team serving by alias has no deployment entity for DataHub to hold)."""
        return bool(self.live_deployments) or self.production

    @property
    def span(self) -> TrainingSpan | None:
        """The run it was last fit on."""
        return newest_run(self.spans)

    def contract(self) -> contracts.Version:
        span = self.span
        return contracts.Version(
            urn=self.model,
            name=self.name,
            version=self.version,
            verdict=self.verdict.status.value,
            reason=self.verdict.reason,
            training_run=span.run if span else None,
            training_started=iso_instant(span.start_ms) if span and span.start_ms is not None else None,
            training_ended=iso_instant(span.end_ms) if span and span.end_ms is not None else None,
            training_runs=[s.run for s in self.spans],
            live_deployments=list(self.live_deployments),
            poisoned_inputs=list(self.poisoned_inputs),
            gate_override=self.gate_override.contract() if self.gate_override else None,
            trained_by=self.trained_by.contract() if self.trained_by else None,
        )


_INF = float("inf")


def _at(ms: int | None) -> str:
    return iso_instant(ms) if ms is not None else "an unknown time"


def _against(span: TrainingSpan, window: BlindWindow) -> Verdict:
    """One training run against one window, both possibly with unknown ends."""
    start, end = span.start_ms, span.end_ms
    earliest_start = start if start is not None else -_INF
    latest_start = start if start is not None else (end if end is not None else _INF)
    earliest_end = end if end is not None else (start if start is not None else -_INF)
    latest_end = end if end is not None else _INF
    onset = window.onset_ms if window.onset_ms is not None else -_INF
    close = window.end_ms if window.end_ms is not None else _INF
    if earliest_start > close or latest_end < onset:
        side = "after the data healed" if earliest_start > close else "before the corruption could have begun"
        until = "still open" if window.open else _at(window.end_ms)
        return Verdict(Status.CLEAN, f"trained {side} (blind window {_at(window.onset_ms)} – {until})")
    if window.likely_onset_ms is not None and latest_end < window.likely_onset_ms:
        return Verdict(Status.SUSPECT, (
            f"training ran {_at(start)} – {_at(end)}, after the last passing run at {_at(window.began_after_ms)} "
            f"but before the table's newest change at {_at(window.likely_onset_ms)}, when the bad data most likely "
            "landed (only that change is stamped: an earlier write could have brought it)"))
    # conservatively, the whole window counts as bad; with no pass bounding its onset only the failing runs do
    bad_from = window.onset_ms if window.onset_ms is not None else window.began_by_ms
    if bad_from is not None and latest_start <= close and earliest_end >= bad_from:
        until = "while the test still fails" if window.open else f"before it healed at {_at(window.ended_by_ms)}"
        return Verdict(
            Status.CONTAMINATED,
            f"training ran {_at(start)} – {_at(end)}, inside the blind window from {_at(bad_from)} {until}",
        )
    if window.onset_ms is None and window.began_by_ms is not None:
        why = "no passing run before the failures bounds when the corruption began"
    elif window.began_by_ms is None:
        why = "the failing runs carry no time"
    else:
        why = "the training run's record lacks the time that would decide it"
    return Verdict(Status.UNKNOWN, f"training ran {_at(start)} – {_at(end)}; {why}")


def worst(verdicts: Sequence[Verdict]) -> Verdict:
    """CONTAMINATED over UNKNOWN over SUSPECT over CLEAN: one bad window, run or root cause condemns a version, and
    a run nothing could judge may have read the worst."""
    for status in (Status.CONTAMINATED, Status.UNKNOWN, Status.SUSPECT):
        found = next((v for v in verdicts if v.status is status), None)
        if found is not None:
            return found
    return verdicts[-1]


def _run(span: TrainingSpan, windows: Sequence[BlindWindow]) -> Verdict:
    if span.start_ms is None and span.end_ms is None:
        return Verdict(Status.UNKNOWN, "its training run records neither a start nor an end")
    return worst([_against(span, w) for w in windows])


def judge(spans: Sequence[TrainingSpan], windows: Sequence[BlindWindow], poisoned_inputs: Sequence[str],
          suspect: str | None = None) -> Verdict:
    """The verdict of one version: the worst over every training run and every window, CLEAN when it reads
    nothing poisoned.  With several runs the reason names the run that decided it.  ``suspect`` says why the
    failure reaches it only as a suspect: then a training inside the window makes it SUSPECT, not CONTAMINATED."""
    verdict = _judged(spans, windows, poisoned_inputs)
    if suspect is not None and verdict.status is Status.CONTAMINATED:
        return Verdict(Status.SUSPECT, f"{verdict.reason}, but the failure reaches it only as a suspect: {suspect}")
    return verdict


def _judged(spans: Sequence[TrainingSpan], windows: Sequence[BlindWindow], poisoned_inputs: Sequence[str]) -> Verdict:
    if not poisoned_inputs:
        return Verdict(Status.CLEAN, "reads none of the poisoned columns")
    if not windows:
        return Verdict(Status.CLEAN, "no failing run recorded")
    if not spans:
        return Verdict(Status.UNKNOWN, "no training run is recorded for this version")
    verdicts = [_run(s, windows) for s in spans]
    if len(spans) > 1:
        verdicts = [
            Verdict(v.status, f"run {display_name(s.run) if s.run else i + 1} of {len(spans)}: {v.reason}")
            for i, (s, v) in enumerate(zip(spans, verdicts))
        ]
    return worst(verdicts)


def _number(version: VersionVerdict) -> tuple[int, int, str]:
    """Newest first: numbered versions by number, then by training end, then by URN."""
    digits = (version.version or "").strip()
    number = int(digits) if digits.isdigit() else -1
    ended = version.span.end_ms if version.span and version.span.end_ms is not None else -1
    return (number, ended, version.model)


def newest_first(versions: Sequence[VersionVerdict]) -> tuple[VersionVerdict, ...]:
    return tuple(sorted(versions, key=_number, reverse=True))


def rollback_target(versions: Sequence[VersionVerdict]) -> VersionVerdict | None:
    """The newest CLEAN version; None when no version is provably clean."""
    return next((v for v in newest_first(versions) if v.verdict.status is Status.CLEAN), None)
