"""What the graph holds now: the aspects Recall is about to replace, and what it owns.

Stand-down needs the previous state: which assertions, incidents and documents
Recall wrote, and which models carry its tags.  That is read from the graph,
not from local memory, so it works from any machine against any graph (a fresh
CI runner, a colleague's Dagster deployment): Recall's entities carry a mark
(:mod:`recall_dagster.writeback.keys`) and the managed tag
(:mod:`recall_dagster.writeback.owned`), and are found through the tag's
incoming edges.  Entities written before the tag existed are found by listing
each entity type, which a write-back does until one has tagged everything it
found (:mod:`recall_dagster.writeback.run`).  The URNs of today's findings are
read directly, whether an index knows them yet or not.
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
    StatusClass,
    StructuredPropertyDefinitionClass,
    TagPropertiesClass,
    _Aspect,
)

from recall_dagster.graph.port import AspectMap, MetadataGraph
from recall_dagster.estate.marks import is_managed
from recall_dagster.writeback.keys import INCIDENT_TYPE_PREFIX, MANAGED_TAG_URN

# The entity types Recall creates, each written by the write path of the same name.
OWNED_TYPES: tuple[str, ...] = ("assertion", "incident", "document")

# Every aspect a write path replaces, each read before it is written; and ``status``, which says whether an
# entity of Recall's was removed (``recall verify`` soft-deletes its scratch ones).
READ_ASPECTS: tuple[type[_Aspect], ...] = (
    StatusClass,
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
    """Marked as Recall's (a custom property on assertions and documents, the type on incidents) and not
    removed."""
    status = _aspect(aspects, urn, StatusClass)
    if status is not None and status.removed:
        return False
    incident = _aspect(aspects, urn, IncidentInfoClass)
    if incident is not None:
        return (incident.customType or "").startswith(INCIDENT_TYPE_PREFIX)
    info = _aspect(aspects, urn, AssertionInfoClass) or _aspect(aspects, urn, DocumentInfoClass)
    return info is not None and is_managed(info.customProperties)


def _typed(urns: Iterable[str], entity_type: str) -> list[str]:
    return sorted(u for u in urns if u.startswith(f"urn:li:{entity_type}:"))


def read_state(
    graph: MetadataGraph, urns: Iterable[str], recall_tags: Sequence[str], *, list_owned: bool = False
) -> GraphState:
    """One incoming-edge read for the managed and tier tags, one batched aspect read; with ``list_owned``,
    one listing per owned entity type besides."""
    edges = graph.related([MANAGED_TAG_URN, *recall_tags], "TaggedWith", "incoming")
    tagged = sorted({u for tag in recall_tags for u in edges.get(tag, ()) if u.startswith("urn:li:mlModel:")})
    found = set(edges.get(MANAGED_TAG_URN, ()))
    if list_owned:
        found.update(u for etype in OWNED_TYPES for u in graph.list_urns(etype))
    aspects = graph.get_aspects(sorted({*urns, *tagged, *found}), READ_ASPECTS)
    owned = {etype: tuple(u for u in _typed(found, etype) if _owned(aspects, u)) for etype in OWNED_TYPES}
    return GraphState(
        aspects=aspects,
        assertions=owned["assertion"],
        incidents=owned["incident"],
        documents=owned["document"],
        tagged_models=tuple(tagged),
    )
