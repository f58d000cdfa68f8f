"""Registered models the graph lists with no version in production: named, never passed over in silence.

A scan judges production versions; a registered model with none (its alias on
another version, or nothing marking any version at all) would otherwise vanish
from the answer. This reads the graph for them; what counts as a mark is the
one production rule (:func:`recall_dagster.estate.production.marked_at_all`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from datahub.metadata.schema_classes import GlobalTagsClass, MLModelPropertiesClass, VersionPropertiesClass

from recall_dagster.estate.closure import Closure
from recall_dagster.estate.names import display_name
from recall_dagster.estate.production import marked_at_all
from recall_dagster.graph.port import MetadataGraph


@dataclass(frozen=True)
class Unserved:
    """Registered models with no version in production, and those of them nothing marks at all."""

    registered: tuple[str, ...] = ()
    unmarked: tuple[str, ...] = ()


def without_production(graph: MetadataGraph, closures: Sequence[Closure]) -> Unserved:
    """Registered models (model groups) the graph lists with no version in production among ``closures``,
    and those of them nothing marks at all (no alias, stage or deployment on any version): what a scan of the
    production models would otherwise pass over in silence."""
    serving = {g for c in closures if c.production for g in c.model.groups}
    groups = [g for g in graph.list_urns("mlModelGroup") if g not in serving]
    if not groups:
        return Unserved()
    members = graph.related(groups, "MemberOf", "incoming")
    versions = sorted({v for found in members.values() for v in found})
    read = graph.get_aspects(versions, [VersionPropertiesClass, GlobalTagsClass, MLModelPropertiesClass])
    marked = {v for v in versions if _marked(read.get(v, {}))}
    return Unserved(
        tuple(sorted({display_name(g) for g in groups})),
        tuple(sorted({display_name(g) for g in groups if not marked.intersection(members.get(g, ()))})),
    )


def _marked(aspects: Mapping[str, Any]) -> bool:
    version, tags, props = (aspects.get(a.ASPECT_NAME) for a in (VersionPropertiesClass, GlobalTagsClass,
                                                                  MLModelPropertiesClass))
    return marked_at_all(
        [a.versionTag for a in (version.aliases or ()) if a.versionTag] if version else [],
        [display_name(t.tag) for t in (tags.tags if tags else ())],
        list(props.deployments or ()) if props else [],
    )
