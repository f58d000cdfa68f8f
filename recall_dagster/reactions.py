"""Which models a reaction (a failed test, a new registry version) must rescan, as pure functions.

Dagster's sensors only wire them in (``recall_dagster/defs/sensors.py``), so a
test or another orchestrator chooses the same models from the same inputs.
Models are always found in the graph's closures: what a failed table feeds is
lineage's answer, not a list kept beside it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

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


def unhandled_failures(
    results: Sequence[AssertionResult], handled: Mapping[str, int], failing: Iterable[str]
) -> tuple[tuple[AssertionResult, ...], dict[str, int]]:
    """The failing results not handled yet, oldest first; and what is handled once they are.

    A sensor's cursor keeps each assertion whose newest result fails, with that result's stamp, rather than
    one time: a result is new when it is not the one kept for its assertion, so one stamped at the very
    millisecond of another already handled, or arriving late with an older stamp, is still seen, and once.
    An assertion whose newest result passes leaves the cursor, which therefore holds the failing ones alone.
    """
    bad = set(failing)
    failing_now = {r.assertion: r.at_ms for r in results if r.result in bad}
    new = (r for r in results if r.result in bad and handled.get(r.assertion) != r.at_ms)
    return tuple(sorted(new, key=lambda r: (r.at_ms, r.assertion))), failing_now


@dataclass(frozen=True)
class Registration:
    """One version in the model registry; the registry numbers a registered model's versions in the order it
    creates them."""

    name: str
    version: int
    at_ms: int  # when it was registered, by the registry's clock

    @property
    def selector(self) -> str:
        return f"{self.name}/{self.version}"


def unhandled_versions(registered: Iterable[Registration], handled: Mapping[str, int]) -> tuple[Registration, ...]:
    """Versions numbered above the highest handled of their registered model, by model then number.

    Numbers, not stamps: a version registered at the very millisecond of one already handled, or stamped
    earlier by a registry whose clock lags, is still new, and a version is new exactly once.
    """
    return tuple(sorted((r for r in registered if r.version > handled.get(r.name, 0)),
                        key=lambda r: (r.name, r.version)))


def highest_versions(registered: Iterable[Registration]) -> dict[str, int]:
    """Each registered model's highest version number: everything up to it is handled."""
    highest: dict[str, int] = {}
    for r in registered:
        highest[r.name] = max(r.version, highest.get(r.name, 0))
    return highest
