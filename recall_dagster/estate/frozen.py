"""Tables a failing test froze: the builds ``dbt build`` skipped below it.

With ``dbt build`` a failing test skips every model downstream of the one it
tests, so the tables a model trains on keep their last good build: nothing bad
reaches the model, but it stops learning anything new, and an on-call engineer
needs to hear both. DataHub's dbt source records a model's successful builds
(``run_results.json``) and drops the skipped ones, so the evidence is a gap: a
table the model reads, downstream of the failing test's table, whose newest
build predates the test's failing streak while the tested table was built
again since (or is a source, which ``dbt build`` tests before building below
it). A table built on its own schedule can show the same gap, which is why the
finding says what it rests on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from recall_dagster.estate.closure import ModelClosure
from recall_dagster.estate.names import display_name
from recall_dagster.instants import iso_instant


@dataclass(frozen=True)
class Frozen:
    """One input of the model whose builds stopped when the test started failing."""

    table: str  # the input's URN
    built_ms: int  # its newest successful build: what the model reads, and what the next retrain would read

    @property
    def text(self) -> str:
        return f"{display_name(self.table)} (last built {iso_instant(self.built_ms)})"

    def to_json(self) -> dict[str, Any]:
        return {"table": self.table, "built": iso_instant(self.built_ms)}


def _newest_build(closure: ModelClosure, urn: str, instant_ms: int) -> int | None:
    """The newest build of the table at ``instant_ms``, over every description of it (a dbt node, its twin)."""
    builds = [ms for twin in closure.same_table(urn) for ms in twin.builds_ms if ms <= instant_ms]
    return max(builds, default=None)


def frozen_inputs(closure: ModelClosure, tested: str, failing_since_ms: int, instant_ms: int) -> tuple[Frozen, ...]:
    """The model's inputs below ``tested`` that stopped being built when its test began failing at
    ``failing_since_ms``, as they stood at ``instant_ms``; empty when the record shows no such gap."""
    table = closure.canonical(tested)
    tested_build = _newest_build(closure, tested, instant_ms)
    found = []
    for urn in closure.direct_inputs:
        if closure.canonical(urn) == table:
            continue
        above = {closure.canonical(u) for u in closure.upstream_of(twin.urn for twin in closure.same_table(urn))}
        if table not in above:
            continue
        built = _newest_build(closure, urn, instant_ms)
        if built is None or built >= failing_since_ms:
            continue
        if tested_build is not None and tested_build <= built:
            continue  # nothing upstream was built after it: no build of it was skipped
        found.append(Frozen(urn, built))
    return tuple(found)
