"""Relationship edges read from the SDK's ``@Relationship`` annotations.

DataHub declares every edge of its graph on the aspect schema that stores it
(``mlModelProperties.mlFeatures`` carries ``Consumes``, ``upstreamLineage``'s
``upstreams[].dataset`` carries ``DownstreamOf``...).  Deriving the index from
those annotations, instead of hand-listing edges, keeps Recall in step with the
installed SDK: a new edge or a renamed field shows up here on upgrade.

Both graph adapters resolve outgoing edges the same way: read the carrying
aspects (the primary store, immediately consistent), then extract the URNs at
the annotated field paths.
"""

from __future__ import annotations

import keyword
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterable, Mapping, Sequence

import avro.schema
from datahub.metadata.schema_classes import (
    ASPECT_CLASSES,
    ASPECT_NAME_MAP,
    ENTITY_TYPE_TO_ASPECT_NAMES,
    _Aspect,
)
from datahub.utilities.urns.urn import guess_entity_type

ANY = "*"  # a path step over every element of an array or every value of a map


@dataclass(frozen=True)
class RelationshipField:
    """One annotated field: an aspect field path that holds edges of one relationship."""

    relationship: str
    aspect_name: str
    path: tuple[str, ...]  # avro field names and "*" steps, e.g. ("upstreams", "*", "dataset")
    target_types: tuple[str, ...]
    source_types: tuple[str, ...]  # entity types that may carry the aspect
    is_lineage: bool

    @property
    def field_path(self) -> str:
        return "/".join(self.path)

    def targets(self, aspect: _Aspect) -> list[str]:
        """URNs this field holds in one aspect instance, in stored order."""
        values: list[Any] = [aspect]
        for step in self.path:
            values = list(_step(values, step))
        return [v for v in values if isinstance(v, str)]


def _step(values: Iterable[Any], step: str) -> Iterable[Any]:
    for value in values:
        if value is None:
            continue
        if step == ANY:
            yield from value.values() if isinstance(value, Mapping) else value
        else:
            yield getattr(value, step + "_" if keyword.iskeyword(step) else step, None)


def _non_null(schema: avro.schema.Schema) -> list[avro.schema.Schema]:
    if isinstance(schema, avro.schema.UnionSchema):
        return [s for s in schema.schemas if s.type != "null"]
    return [schema]


def _branch_name(schema: avro.schema.Schema) -> str:
    return getattr(schema, "name", None) or schema.type


def _resolve(schema: avro.schema.Schema, steps: Sequence[str]) -> tuple[str, ...] | None:
    """Turn an annotation path into attribute steps, validated against the schema.

    Annotation paths may name a union branch (``chartInfo.inputs`` uses
    ``/*/string``); the SDK's classes hold the bare value, so such steps vanish.
    Returns None when the path does not fit the schema.
    """
    if not steps:
        return ()
    head, rest = steps[0], steps[1:]
    branches = _non_null(schema)
    named = [b for b in branches if _branch_name(b) == head]
    if isinstance(schema, avro.schema.UnionSchema) and named:
        return _resolve(named[0], rest)
    if len(branches) != 1:
        return None
    node = branches[0]
    if head == ANY and isinstance(node, avro.schema.ArraySchema):
        tail = _resolve(node.items, rest)
    elif head == ANY and isinstance(node, avro.schema.MapSchema):
        tail = _resolve(node.values, rest)
    elif isinstance(node, avro.schema.RecordSchema) and head in node.fields_dict:
        tail = _resolve(node.fields_dict[head].type, rest)
    else:
        return None
    return None if tail is None else (head, *tail)


def _annotated_paths(
    schema: avro.schema.Schema, prefix: tuple[str, ...], seen: frozenset[str]
) -> Iterable[tuple[tuple[str, ...], dict]]:
    """Every (path, annotation) below a schema, including nested records and arrays."""
    for node in _non_null(schema):
        if isinstance(node, avro.schema.ArraySchema):
            yield from _annotated_paths(node.items, (*prefix, ANY), seen)
        elif isinstance(node, avro.schema.MapSchema):
            yield from _annotated_paths(node.values, (*prefix, ANY), seen)
        elif isinstance(node, avro.schema.RecordSchema) and node.fullname not in seen:
            inner = seen | {node.fullname}
            for fld in node.fields:
                here = (*prefix, fld.name)
                annotation = fld.other_props.get("Relationship") or {}
                if "name" in annotation:
                    yield here, annotation
                else:
                    for sub_path, sub_annotation in annotation.items():
                        steps = [s for s in sub_path.split("/") if s]
                        resolved = _resolve(fld.type, steps)
                        if resolved is not None:
                            yield (*here, *resolved), sub_annotation
                yield from _annotated_paths(fld.type, here, inner)


def _carriers() -> dict[str, tuple[str, ...]]:
    carriers: dict[str, list[str]] = {}
    for entity_type, aspect_names in ENTITY_TYPE_TO_ASPECT_NAMES.items():
        for aspect_name in aspect_names:
            carriers.setdefault(aspect_name, []).append(entity_type)
    return {name: tuple(sorted(types)) for name, types in carriers.items()}


@lru_cache(maxsize=1)
def relationship_index() -> Mapping[str, tuple[RelationshipField, ...]]:
    """Relationship name -> every aspect field that carries it, built once per process."""
    carriers = _carriers()
    index: dict[str, list[RelationshipField]] = {}
    for aspect_class in ASPECT_CLASSES:
        name = aspect_class.get_aspect_name()
        for path, annotation in _annotated_paths(aspect_class.RECORD_SCHEMA, (), frozenset()):
            index.setdefault(annotation["name"], []).append(
                RelationshipField(
                    relationship=annotation["name"],
                    aspect_name=name,
                    path=path,
                    target_types=tuple(annotation.get("entityTypes", ())),
                    source_types=carriers.get(name, ()),
                    is_lineage=bool(annotation.get("isLineage", False)),
                )
            )
    return {rel: tuple(fields) for rel, fields in index.items()}


def fields_for(
    relationship: str, *, entity_type: str | None = None, aspect_name: str | None = None
) -> list[RelationshipField]:
    """The fields carrying a relationship, optionally narrowed to a source entity type or aspect."""
    fields = relationship_index().get(relationship)
    if fields is None:
        raise ValueError(
            f"unknown relationship {relationship!r}; the SDK declares: "
            + ", ".join(sorted(relationship_index()))
        )
    return [
        f
        for f in fields
        if (entity_type is None or entity_type in f.source_types)
        and (aspect_name is None or f.aspect_name == aspect_name)
    ]


def carrying_aspects(relationship: str) -> list[type[_Aspect]]:
    """Aspect classes to read to follow a relationship (a read list, not a filter)."""
    names = sorted({f.aspect_name for f in fields_for(relationship)})
    return [ASPECT_NAME_MAP[n] for n in names]


def extract_targets(aspect: _Aspect, relationship: str) -> list[str]:
    """Target URNs of one relationship held by a typed aspect, first occurrence order."""
    found: dict[str, None] = {}
    for fld in fields_for(relationship, aspect_name=aspect.get_aspect_name()):
        found.update(dict.fromkeys(fld.targets(aspect)))
    return list(found)


def outgoing(
    aspects_by_urn: Mapping[str, Mapping[str, _Aspect]], relationship: str
) -> dict[str, list[str]]:
    """Targets of a relationship for every URN, from aspects already read."""
    result: dict[str, list[str]] = {}
    for urn, aspects in aspects_by_urn.items():
        found: dict[str, None] = {}
        for aspect in aspects.values():
            found.update(dict.fromkeys(extract_targets(aspect, relationship)))
        result[urn] = list(found)
    return result


def entity_type(urn: str) -> str:
    """The entity type a URN names (``urn:li:mlModel:...`` -> ``mlModel``)."""
    return guess_entity_type(urn)
