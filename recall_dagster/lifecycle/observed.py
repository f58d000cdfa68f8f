"""What the orchestrator saw of a training's inputs: when each was last written, and how many rows it held.

Dagster keeps, for every asset, its last materialization and, where the team
asks for it (dagster-dbt's ``fetch_row_counts()``, or any asset's
``dagster/row_count``), the rows it wrote: a Dagster + dbt team has this
without DataHub ``operation`` aspects or dataset profiles. The orchestrator
names a table its own way (``dagster/table_name``: ``jaffle.main.daily_orders``);
it is matched to the model's training inputs by name, the way every command
matches a name (:meth:`recall_dagster.estate.ModelClosure.named`). Pure: the
Dagster wiring reads the instance, this decides what it means.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from recall_dagster.estate import ModelClosure


@dataclass(frozen=True)
class Observed:
    table: str  # the orchestrator's name for the table it wrote
    updated_ms: int  # when it was last written
    rows: int | None  # how many rows it held then, when recorded
    source: str  # where this came from, as a person finds it: "Dagster asset jaffle/daily_orders, run 1a2b3c4d"
    window_hours: float | None = None  # the freshness window the orchestrator holds it to (a Dagster policy's)


def observed_inputs(closure: ModelClosure, inputs: Iterable[str], observed: Sequence[Observed]
                    ) -> Mapping[str, Observed]:
    """Each of ``inputs`` (canonical URNs) that one observation names, through any of its twins, with the
    newest such observation. An observation naming several inputs is left out: a name that is not one table
    proves nothing about either."""
    matches: dict[str, list[Observed]] = {}
    for seen in observed:
        named = [i for i in dict.fromkeys(inputs) if closure.named(i, seen.table)]
        if len(named) == 1:
            matches.setdefault(named[0], []).append(seen)
    return {urn: max(seen, key=lambda s: s.updated_ms) for urn, seen in matches.items()}
