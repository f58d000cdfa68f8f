"""What the lifecycle reads beyond a closure: assertion run histories, training runs, the estate.

Closures keep only an assertion's latest result and a run's inputs; the blind
window needs the whole run history and when each training ran.  These are the
plain values the readers (:mod:`recall_dagster.lifecycle.read`) fill in and the
pure core reasons over; hand-made ones drive the tests.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable, Mapping, Sequence, cast

from recall_dagster.estate import Dataset, ModelClosure, display_name
from recall_dagster.estate.columns import ColumnGraph
from recall_dagster.estate.names import assertion_named_by


@dataclass(frozen=True)
class AssertionRun:
    """One completed run; ``at_ms`` is None when the runner recorded no time."""

    at_ms: int | None
    result: str | None  # SUCCESS / FAILURE / ERROR
    failed_rows: int | None = None  # only from a check that counted failing rows
    measured: str | None = None  # what any other check measured, by its name ("row_count 1,520, expected ≥ 40,000")


@dataclass(frozen=True)
class AssertionRecord:
    """One assertion and its run history, newest first (as the graph serves it)."""

    urn: str
    name: str
    dataset: str  # the dataset it asserts on
    column: str | None  # None: a table-level assertion
    kind: str | None = None  # the test's native type or runner type, for the postmortem's classification
    runs: tuple[AssertionRun, ...] = ()
    # when the asserted table's content changed by a write, by records that list every write (operations,
    # builds), oldest first; empty unless the table is materialised (a view changes whenever its inputs do,
    # so writes to it bound nothing)
    writes_ms: tuple[int, ...] = ()
    aliases: tuple[str, ...] = ()  # a dbt test's unique_id and own name
    # the newest change a stamp records (the platform's lastModified, dbt source freshness): one write, the
    # latest, saying nothing of those before it; None when unknown or the table is not materialised
    last_change_ms: int | None = None

    def named(self, target: str) -> bool:
        """Whether ``target`` names this assertion (:func:`assertion_named_by`: its URN, name, or a name its
        runner gives it, a dbt test's ``unique_id``)."""
        return assertion_named_by(self.urn, target, (self.name, *self.aliases))

    def as_of(self, instant_ms: int) -> "AssertionRecord":
        """The history as it stood at ``instant_ms``: runs and writes made after it are not yet known
        (``--as-of``); a run with no time is kept, as the scan keeps it (:meth:`recall_dagster.estate.views.Assertion.as_of`)."""
        runs = tuple(r for r in self.runs if r.at_ms is None or r.at_ms <= instant_ms)
        writes = tuple(w for w in self.writes_ms if w <= instant_ms)
        changed = self.last_change_ms if self.last_change_ms is not None and self.last_change_ms <= instant_ms else None
        if len(runs) == len(self.runs) and len(writes) == len(self.writes_ms) and changed == self.last_change_ms:
            return self
        return replace(self, runs=runs, writes_ms=writes, last_change_ms=changed)

    @property
    def latest(self) -> AssertionRun | None:
        """The newest timed run, else the first listed: the state the test is in now."""
        timed = [r for r in self.runs if r.at_ms is not None]
        if timed:
            return max(timed, key=lambda r: r.at_ms or 0)
        return self.runs[0] if self.runs else None

    def newest_failure(self, failing: Callable[[str | None], bool]) -> AssertionRun | None:
        """The newest failing run: what the failure weighed and measured, even after it healed."""
        failures = [r for r in self.runs if failing(r.result)]
        timed = [r for r in failures if r.at_ms is not None]
        return max(timed, key=lambda r: r.at_ms or 0) if timed else (failures[0] if failures else None)

    @property
    def where(self) -> str:
        return f"{display_name(self.dataset)}.{self.column}" if self.column else display_name(self.dataset)


@dataclass(frozen=True)
class TrainingSpan:
    """When one model version was trained and how many rows each table held when it was read."""

    run: str  # the training run (dataProcessInstance) URN
    start_ms: int | None
    end_ms: int | None
    table_rows: Mapping[str, int] = field(default_factory=dict)  # "schema.table" -> rows


def newest_run(spans: Sequence[TrainingSpan]) -> TrainingSpan | None:
    """The run that ended (else started) last: its row counts are what the version was finally fit on."""
    timed = [s for s in spans if s.end_ms is not None or s.start_ms is not None]
    if not timed:
        return spans[-1] if spans else None
    return max(timed, key=lambda s: cast(int, s.end_ms if s.end_ms is not None else s.start_ms))  # timed: one is set


@dataclass(frozen=True)
class OpenIncident:
    """An ACTIVE DataHub incident on a dataset, whoever raised it."""

    urn: str
    title: str
    datasets: tuple[str, ...]


@dataclass(frozen=True)
class Estate:
    """Every model version's closure and the column lineage they share, read at one instant."""

    closures: tuple[ModelClosure, ...]
    columns: ColumnGraph
    datasets: Mapping[str, Dataset]  # every dataset any closure holds

    def twins(self, urn: str) -> tuple[str, ...]:
        """Every dataset URN that names the same table as ``urn`` (itself included)."""
        target = self.columns.canonical.get(urn, urn)
        return tuple(sorted(u for u, c in self.columns.canonical.items() if c == target)) or (urn,)
