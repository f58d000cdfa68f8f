"""Which model versions a person or a sensor means, by the registry's own names.

A registered model is named as the registry names it (``fraud_detector``), a
version as ``name/version`` (``fraud_detector/3``), or either by its URN; the
graph answers, no URN is ever built from a name.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from recall_dagster.estate.closure import ModelClosure
from recall_dagster.estate.production import replaced_by_retrain


def is_named(closure: ModelClosure, name: str) -> bool:
    """True when ``name`` is the version's URN, its registered model's name or URN, or its own name."""
    return name in (closure.urn, closure.registered_name, closure.registered_model, closure.model.name)


def is_version(closure: ModelClosure, selector: str) -> bool:
    """True when ``selector`` is ``<registered name>/<version>`` of this closure, or its URN."""
    name, _, version = selector.rpartition("/")
    if selector == closure.urn:
        return True
    return bool(name) and closure.registered_name == name and (closure.model.version or "").strip() == version


def select(closures: Iterable[ModelClosure], names: Sequence[str] = (), versions: Sequence[str] = ()) -> list[ModelClosure]:
    """The closures any name or version selector picks, in their original order."""
    return [c for c in closures if any(is_named(c, n) for n in names) or any(is_version(c, v) for v in versions)]


def serving_version(closures: Sequence[ModelClosure], name: str) -> ModelClosure | None:
    """The version a retrain of ``name`` replaces (:func:`~recall_dagster.estate.production.replaced_by_retrain`).

    An exact version (URN or ``name/version``) is taken as given.
    """
    exact = [c for c in closures if is_version(c, name)]
    if exact:
        return exact[0]
    return replaced_by_retrain([c for c in closures if is_named(c, name)])
