"""Which models a reaction (a failed test, a new registry version) must rescan, as pure functions.

Dagster's sensors only wire them in (``recall_dagster/defs/sensors.py``), so a
test or another orchestrator chooses the same models from the same inputs.
Models are always found in the graph's closures: what a failed table feeds is
lineage's answer, not a list kept beside it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from recall_dagster.estate import ModelClosure
from recall_dagster.estate.names import named_by


def reads(closure: ModelClosure, dataset: str) -> bool:
    """True when the closure holds ``dataset``: a URN, ``platform:name``, a full name, a name's trailing parts
    (``marts.fct_orders``), or a dbt node's ``unique_id``."""
    return any(named_by(urn, dataset, d.aliases) for urn, d in closure.datasets.items())


def models_reading(closures: Iterable[ModelClosure], datasets: Iterable[str]) -> tuple[str, ...]:
    """Registered names of the models whose closures hold any of ``datasets``, sorted."""
    wanted = tuple(datasets)
    return tuple(sorted({c.registered_name for c in closures if any(reads(c, d) for d in wanted)}))


@dataclass(frozen=True)
class AssertionResult:
    """One assertion's newest result, as DataHub holds it, whoever reported it."""

    assertion: str
    dataset: str | None
    at_ms: int
    result: str | None


def new_failures(
    results: Sequence[AssertionResult], after_ms: int, failing: Iterable[str]
) -> tuple[AssertionResult, ...]:
    """Results newer than ``after_ms`` whose outcome counts as failing, oldest first."""
    bad = set(failing)
    return tuple(sorted((r for r in results if r.at_ms > after_ms and r.result in bad), key=lambda r: r.at_ms))
