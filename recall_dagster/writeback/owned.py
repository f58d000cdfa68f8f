"""The managed tag on every assertion, incident and document Recall writes: how a later scan finds them.

Stand-down needs every entity Recall wrote, including those no finding names
any more.  Listing each entity type finds them but reads everyone's
assertions, incidents and documents on every scan (tens of thousands where
dbt tests are ingested); the managed tag's incoming ``TaggedWith`` edges name
exactly Recall's, in one read.  The tag belongs to the entity's own write path
and is planned before its other aspect, so an entity never exists untagged
when a write fails half-way; the rest of an entity's tags are kept as they are.
"""

from __future__ import annotations

from typing import Iterable, cast

from datahub.metadata.schema_classes import GlobalTagsClass, TagAssociationClass, TagPropertiesClass

from recall_dagster.estate import display_name
from recall_dagster.writeback.keys import MANAGED_TAG, MANAGED_TAG_URN
from recall_dagster.writeback.state import OWNED_TYPES, GraphState
from recall_dagster.writeback.writes import Write, WritePath


def _definition() -> Write:
    properties = TagPropertiesClass(
        name=MANAGED_TAG,
        description="Recall wrote this entity and rewrites it on every scan: edits to it do not last.",
        colorHex="#9b9b9b",
    )
    return Write.of("tag", MANAGED_TAG_URN, properties, f"define tag {MANAGED_TAG}")


def plan_owned(writes: Iterable[Write], state: GraphState) -> list[Write]:
    """The managed tag's definition, and the tag on every entity of Recall's that ``writes`` write or the
    graph holds (the entities written before the tag existed get it here), each on its entity's path."""
    owned = {w.urn: w.path for w in writes if w.path in OWNED_TYPES and not w.is_event}
    for etype, urns in zip(OWNED_TYPES, (state.assertions, state.incidents, state.documents)):
        owned.update({urn: cast(WritePath, etype) for urn in urns})
    marks = [_definition()]
    for urn, path in sorted(owned.items()):
        current = state.aspect(urn, GlobalTagsClass)
        tags = list(current.tags) if current is not None else []
        if all(t.tag != MANAGED_TAG_URN for t in tags):
            tags.append(TagAssociationClass(tag=MANAGED_TAG_URN))
        marks.append(Write.of(path, urn, GlobalTagsClass(tags=tags), f"{display_name(urn)}: tag {MANAGED_TAG}"))
    return marks
