"""Which model versions a person or a sensor means, by the registry's own names.

A registered model is named as the registry names it (``fraud_detector``), a
version as ``name/version`` (``fraud_detector/3``), or either by its URN; the
graph answers, no URN is ever built from a name (:mod:`recall_dagster.estate.naming`
reads the text).
"""

from __future__ import annotations

from typing import Iterable, Sequence

from recall_dagster.estate.closure import ModelClosure

from recall_dagster.estate.naming import C, model_name
from recall_dagster.estate.production import replaced_by_retrain


def select(closures: Iterable[C], names: Sequence[str] = (), versions: Sequence[str] = ()) -> list[C]:
    """The closures any name (a registered model, or a version) or version selector picks, in their original
    order; a name several registered models answer to is a ConfigError."""
    pool = list(closures)
    picked = {c.urn for n in names for c in model_name(n).among(pool)}
    picked |= {c.urn for v in versions for c in model_name(v).among(pool, exact=True)}
    return [c for c in pool if c.urn in picked]


def version_retrain_replaces(closures: Sequence[ModelClosure], name: str) -> ModelClosure | None:
    """The version a retrain of ``name`` replaces (:func:`~recall_dagster.estate.production.replaced_by_retrain`).

    An exact version (URN or ``name/version``) is taken as given.
    """
    selector = model_name(name)
    exact = selector.among(closures, exact=True)
    if exact:
        return exact[0]
    return replaced_by_retrain(selector.among(closures))
