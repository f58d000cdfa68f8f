"""What the graph holds now: the aspects Recall is about to replace, and what it owns.

Stand-down needs the previous state: which assertions, incidents and documents
Recall wrote, and which models carry its tags.  That is read from the graph,
not from local memory, so it works from any machine against any graph (a fresh
CI runner, a colleague's Dagster deployment): Recall's entities carry a mark
(:mod:`recall_dagster.writeback.keys`) and are found by listing each entity type
and keeping the marked ones.  On GMS listing is search-backed and lags writes
by seconds, which a scan cadence of minutes or more never notices; the URNs of
today's findings are read directly, whether search knows them yet or not.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence, TypeVar

from datahub.metadata.schema_classes import (
    AssertionInfoClass,
    DocumentInfoClass,
    GlobalTagsClass,
    IncidentInfoClass,
    StructuredPropertiesClass,
    StructuredPropertyDefinitionClass,
    TagPropertiesClass,
    _Aspect,
)

from recall_dagster.graph.port import AspectMap, MetadataGraph
from recall_dagster.estate.marks import is_managed
from recall_dagster.writeback.keys import INCIDENT_TYPE_PREFIX

# Every aspect a write path replaces; each is read before it is written.
WRITTEN_ASPECTS: tuple[type[_Aspect], ...] = (
    AssertionInfoClass,
    IncidentInfoClass,
    DocumentInfoClass,
    GlobalTagsClass,
    StructuredPropertiesClass,
    StructuredPropertyDefinitionClass,
    TagPropertiesClass,
)

A = TypeVar("A", bound=_Aspect)


def _aspect(aspects: AspectMap, urn: str, aspect_class: type[A]) -> A | None:
    found = aspects.get(urn, {}).get(aspect_class.ASPECT_NAME)
    return found if isinstance(found, aspect_class) else None


@dataclass(frozen=True)
class GraphState:
    aspects: AspectMap
    assertions: tuple[str, ...]  # Recall's assertions in the graph
    incidents: tuple[str, ...]  # Recall's incidents
    documents: tuple[str, ...]  # Recall's pre-mortem documents
    tagged_models: tuple[str, ...]  # models carrying a Recall tag

    def aspect(self, urn: str, aspect_class: type[A]) -> A | None:
        return _aspect(self.aspects, urn, aspect_class)

    @classmethod
    def of(cls, aspects: AspectMap) -> "GraphState":
        """Just the aspects a few writes replace, without the listings a scan's write-back needs."""
        return cls(aspects, (), (), (), ())


def _owned(aspects: AspectMap, urn: str) -> bool:
    """Marked as Recall's: a custom property on assertions and documents, the type on incidents."""
    incident = _aspect(aspects, urn, IncidentInfoClass)
    if incident is not None:
        return (incident.customType or "").startswith(INCIDENT_TYPE_PREFIX)
    info = _aspect(aspects, urn, AssertionInfoClass) or _aspect(aspects, urn, DocumentInfoClass)
    return info is not None and is_managed(info.customProperties)


def read_state(graph: MetadataGraph, urns: Iterable[str], recall_tags: Sequence[str]) -> GraphState:
    """One listing per owned entity type, one incoming-edge read per tag, one batched aspect read."""
    listed = {etype: graph.list_urns(etype) for etype in ("assertion", "incident", "document")}
    tagged = sorted(
        {
            urn
            for found in graph.related(list(recall_tags), "TaggedWith", "incoming").values()
            for urn in found
            if urn.startswith("urn:li:mlModel:")
        }
    )
    wanted = sorted({*urns, *tagged, *(u for found in listed.values() for u in found)})
    aspects = graph.get_aspects(wanted, WRITTEN_ASPECTS)
    return GraphState(
        aspects=aspects,
        assertions=tuple(u for u in listed["assertion"] if _owned(aspects, u)),
        incidents=tuple(u for u in listed["incident"] if _owned(aspects, u)),
        documents=tuple(u for u in listed["document"] if _owned(aspects, u)),
        tagged_models=tuple(tagged),
    )
