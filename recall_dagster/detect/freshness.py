"""Whether a table is fresh: the one rule the scan, the retrain gate, protect and diagnose all apply.

DataHub describes one table several times (the warehouse table, its dbt model,
the mlflow source's reference to it), and each description may record a change
the others do not: a dbt build writes the warehouse table whose own
``lastModified`` is a week old. So a table last changed when the newest record
on any of its descriptions says it did, or when the orchestrator saw it written;
and it is held to the strictest window any of its names is given (a team that
set 24 hours on ``postgres:orders`` meant the table, by whichever name a model
reaches it). A description the graph says is gone records nothing: a removed
table is another detector's concern. Judging each description on its own let
the scan call a table stale that the gate called fresh.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from recall_dagster.detect.config import FreshnessConfig
from recall_dagster.estate import Dataset, Freshness
from recall_dagster.instants import HOUR_MS


@dataclass(frozen=True)
class Own:
    """What one description of a table says by itself: its last recorded change at the instant, and its
    window. Judged once per dataset per scan (:mod:`recall_dagster.detect.memo`), combined per table."""

    dataset: Dataset
    last: Freshness | None
    window_hours: float


@dataclass(frozen=True)
class TableFreshness:
    last: Freshness | None  # the newest change any description (or the orchestrator) records; None: nobody does
    recorded_on: Dataset | None  # the description that recorded it; None when the orchestrator saw it
    window_hours: float  # the strictest window any description is given
    age_hours: float | None  # how old ``last`` is at the instant

    @property
    def stale(self) -> bool:
        return self.age_hours is not None and self.age_hours > self.window_hours


def own(dataset: Dataset, instant_ms: int, windows: FreshnessConfig) -> Own:
    return Own(dataset, None if dataset.missing else dataset.freshness_at(instant_ms), windows.window_hours(dataset))


def combine(
    descriptions: Iterable[Own], instant_ms: int, observed: Iterable[Freshness] = (), windows: Iterable[float] = (),
) -> TableFreshness:
    """One table from what each of its descriptions says (at least one), what the orchestrator saw, and the
    windows the orchestrator holds it to (a Dagster freshness policy): the strictest window wins."""
    said = list(descriptions)
    window = min([*(o.window_hours for o in said), *windows])
    records: list[tuple[Freshness, Dataset | None]] = [(o.last, o.dataset) for o in said if o.last is not None]
    records += [(f, None) for f in observed]
    if not records:
        return TableFreshness(None, None, window, None)
    # the newest wins; a tie goes to the first named (the graph's own record before the orchestrator's)
    last, on = max(records, key=lambda r: r[0].updated_ms)
    return TableFreshness(last, on, window, (instant_ms - last.updated_ms) / HOUR_MS)


def judge_table(
    twins: Sequence[Dataset], instant_ms: int, windows: FreshnessConfig, observed: Iterable[Freshness] = (),
    held_to: Iterable[float] = (),
) -> TableFreshness:
    """The freshness of the table ``twins`` all describe (:meth:`ModelClosure.same_table`), at ``instant_ms``;
    ``held_to``: windows the orchestrator declares for it, besides recall.yaml's."""
    return combine((own(d, instant_ms, windows) for d in twins), instant_ms, observed, held_to)
