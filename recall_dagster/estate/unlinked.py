"""Assertions no model's closure holds: read so that a failing one is said, never passed over in silence.

A team's failing dbt test on a table no model reads (or whose lineage DataHub
lacks) is real news even when Recall can tie it to nothing: the scan's
coverage, incidents sync and the blind window each list the ones failing,
read here by one rule (removed assertions and Recall's own are not counted).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Collection, Sequence

from datahub.metadata.schema_classes import AssertionInfoClass, StatusClass

from recall_dagster.contracts.base import UnlinkedAssertion
from recall_dagster.estate.closure import Closure
from recall_dagster.estate.marks import recall_assertion
from recall_dagster.estate.parse import asserted_entity, assertion_kind, is_removed, parse_assertion
from recall_dagster.estate.resolve import assertion_runs
from recall_dagster.estate.views import Assertion
from recall_dagster.graph.port import MetadataGraph, aspect_of


@dataclass(frozen=True)
class Outside:
    """An assertion outside every closure, as it stood at the instant asked about."""

    assertion: Assertion
    dataset: str  # the entity it asserts, "" when its info names none
    kind: str | None  # the test's own name for what it checks

    def contract(self) -> UnlinkedAssertion:
        return UnlinkedAssertion(urn=self.assertion.urn, name=self.assertion.name, dataset=self.dataset,
                                 result=self.assertion.result)


def failing_outside(
    graph: MetadataGraph, linked: Collection[str], failing: Callable[[str | None], bool], instant_ms: int,
    history: int,
) -> tuple[Outside, ...]:
    """The assertions in the graph outside ``linked`` whose result at ``instant_ms`` is ``failing``; ``history``
    runs are read, so an instant in the past finds the run then latest."""
    others = [a for a in graph.list_urns("assertion") if a not in linked]
    if not others:
        return ()
    infos = graph.get_aspects(others, [AssertionInfoClass, StatusClass])
    kept = [a for a in others if not is_removed(infos.get(a, {})) and not recall_assertion(infos.get(a, {}))]
    runs = assertion_runs(graph, kept, history)
    found = []
    for urn in kept:
        info = aspect_of(infos.get(urn, {}), AssertionInfoClass)
        assertion = parse_assertion(urn, info, runs[urn]).as_of(instant_ms)
        if assertion.result is not None and failing(assertion.result):
            found.append(Outside(assertion, asserted_entity(info) or "", assertion_kind(info)))
    return tuple(found)


def asserted_in(closures: Sequence[Closure]) -> set[str]:
    """Every assertion the closures hold, on any of their datasets."""
    return {a for c in closures for a in c.assertion_urns}


def unlinked_line(unlinked: Sequence[Outside]) -> str | None:
    """What a scan's coverage says of them, or None when nothing fails outside its closures."""
    if not unlinked:
        return None
    return (f"{len(unlinked)} failing assertion(s) on data no scanned model reads: "
            + ", ".join(o.assertion.name for o in unlinked))
