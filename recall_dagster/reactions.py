"""Which models a reaction (a failed dbt test, a new registry version) must rescan, as a pure function.

Dagster's sensors only wire it in (``recall_dagster/defs/sensors.py``), so a
test or another orchestrator chooses the same models from the same inputs.
"""

from __future__ import annotations

from typing import Collection, Hashable, Iterable, Mapping


def affected_models(failed: Iterable[Hashable], upstream: Mapping[str, Collection[Hashable]]) -> tuple[str, ...]:
    """The models (keys of ``upstream``) whose upstream holds any of the ``failed`` datasets, sorted.

    ``upstream`` maps a model to everything it reads, directly or not; the
    datasets only have to be named alike in both arguments (asset keys, URNs...).
    """
    broken = set(failed)
    return tuple(sorted(model for model, reads in upstream.items() if broken.intersection(reads)))
