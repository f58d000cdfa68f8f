"""What the graph let a scan verify, and what it did not: coverage, not a silent PASS.

A detector that finds nothing because the evidence is absent looks exactly like
one that found nothing wrong; coverage tells the two apart. One table counts
once, whichever of its URNs (warehouse table, dbt model, a source's reference)
the closures hold, and a table counts as covered when any of its twins is.
Pure: closures and the instant in, counts out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping, Sequence

from recall_dagster.contracts import scan as contract
from recall_dagster.contracts.base import UnlinkedAssertion
from recall_dagster.estate.closure import ModelClosure
from recall_dagster.estate.names import display_name
from recall_dagster.estate.unserved import Unserved
from recall_dagster.estate.views import Dataset

# what each dataset count means, in report order
DATASET_SIGNALS: Mapping[str, str] = {
    "with_schema": "schema known",
    "with_freshness": "freshness known",
    "with_owners": "an active owner",
    "with_assertions": "a test or assertion",
    "with_column_lineage": "column-level lineage",
}
MODEL_SIGNALS: Mapping[str, str] = {
    "with_features": "features recorded",
    "with_training_inputs": "training inputs recorded",
    "with_serving_path": "a serving path (feature tables)",
    "with_live_deployments": "a live deployment",
}


@dataclass(frozen=True)
class Coverage:
    models: int
    datasets: int
    model_counts: Mapping[str, int]
    dataset_counts: Mapping[str, int]
    # model -> the names of the training inputs it recorded that name no catalogued table
    unresolved_inputs: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # model -> the feature sources on an object store's side that nothing catalogued (no orphan: unverified)
    uncatalogued_sources: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def contract(self, without_production: Unserved, unlinked: Sequence[UnlinkedAssertion]) -> contract.Coverage:
        """The scan's coverage: these signals, with the registered models it did not judge and the failing
        assertions no model it scanned reads."""
        return contract.Coverage(
            models={"total": self.models, **self.model_counts},
            datasets={"total": self.datasets, **self.dataset_counts},
            unresolved_training_inputs={m: list(names) for m, names in self.unresolved_inputs.items()},
            uncatalogued_feature_sources={m: list(urns) for m, urns in self.uncatalogued_sources.items()},
            registered_without_production=list(without_production.registered),
            registered_unmarked=list(without_production.unmarked),
            unlinked_failing=list(unlinked),
        )

    def lines(self) -> list[str]:
        """One line per signal a person reads: ``freshness known for 5 of 9 datasets``."""
        return [
            *(f"{what} for {self.dataset_counts[key]} of {self.datasets} datasets"
              for key, what in DATASET_SIGNALS.items()),
            *(f"{what} for {self.model_counts[key]} of {self.models} models" for key, what in MODEL_SIGNALS.items()),
            *(f"training inputs of {model} that name no catalogued table: {', '.join(names)}"
              for model, names in self.unresolved_inputs.items()),
            *(f"feature sources of {model} nothing catalogued: {', '.join(map(display_name, urns))}"
              for model, urns in self.uncatalogued_sources.items()),
        ]


def _model_signals(closure: ModelClosure) -> dict[str, bool]:
    return {
        "with_features": bool(closure.features),
        # an input counts once it names a table the catalog describes, not a bare MLflow dataset reference
        "with_training_inputs": len(closure.training_inputs) > len(closure.unresolved_inputs),
        "with_serving_path": any(f.tables for f in closure.features),
        "with_live_deployments": bool(closure.live_deployments),
    }


def _dataset_signals(twins: Sequence[Dataset], now_ms: int) -> dict[str, bool]:
    def some(test: Callable[[Dataset], object]) -> bool:
        return any(test(d) for d in twins)

    return {
        "with_schema": some(lambda d: d.fields is not None),
        "with_freshness": some(lambda d: d.freshness_at(now_ms)),
        "with_owners": some(lambda d: d.has_active_owner),
        "with_assertions": some(lambda d: d.assertions),
        "with_column_lineage": some(lambda d: d.column_lineage),
    }


def _count(flags: Iterable[Mapping[str, bool]], keys: Iterable[str]) -> dict[str, int]:
    rows = list(flags)
    return {key: sum(1 for row in rows if row[key]) for key in keys}


def coverage(closures: Sequence[ModelClosure], now_ms: int) -> Coverage:
    """Coverage of the models scanned and of every table their closures reach (dangling ones excluded)."""
    tables: dict[str, list[Dataset]] = {}
    for closure in closures:
        for urn, dataset in closure.datasets.items():
            if not dataset.missing:
                tables.setdefault(closure.canonical(urn), []).append(dataset)
    return Coverage(
        models=len(closures),
        datasets=len(tables),
        model_counts=_count(map(_model_signals, closures), MODEL_SIGNALS),
        dataset_counts=_count((_dataset_signals(t, now_ms) for t in tables.values()), DATASET_SIGNALS),
        unresolved_inputs={c.model.name: tuple(display_name(i) for i in c.unresolved_inputs)
                           for c in closures if c.unresolved_inputs},
        uncatalogued_sources={c.model.name: tuple(sorted(c.uncatalogued_sources))
                              for c in closures if c.uncatalogued_sources},
    )
