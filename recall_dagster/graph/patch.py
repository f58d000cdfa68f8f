"""DataHub's server-side PATCH semantics, for a store with no GMS to apply them.

GMS does not apply a PATCH proposal as plain RFC 6902: a per-aspect template
first turns the aspect's arrays into maps keyed by what identifies an element
(``upstreams`` by ``dataset``, ``tags`` by ``tag``...), applies the operations
to that document, then turns the maps back into arrays.  That is what makes
``add /upstreams/<urn>`` idempotent and ``remove /tags/<urn>`` independent of
positions.  DataHub Lite stores whole aspects only, so Recall replays the
templates here: :func:`apply_patch` merges a patch into the stored aspect and
the caller writes the result as an upsert.

Which arrays are keyed, and by what:

* a plain patch (a JSON list of operations) uses :data:`TEMPLATES`, the keys of
  GMS's templates for the paths the SDK's builders emit as plain patches; keys
  of the SDK's older builders are kept where GMS has since grown more (owners
  by ``owner``/``type``, terms by ``urn``, structured properties by
  ``propertyUrn``), as those are the paths plain patches carry;
* a ``GenericJsonPatch`` (``{"arrayPrimaryKeys": ..., "patch": [...]}``, what
  today's builders send for tags, terms, owners, domains, structured
  properties, documentation and links) is keyed by its ``arrayPrimaryKeys``
  only, as GMS's ``GenericPatchTemplate`` does.  A key field may name a nested
  field with ``␟`` (``attribution␟source``); a missing key counts as ``""``,
  and a path shorter than the keys addresses every element under that prefix.

Any other aspect is patched as plain JSON: paths may name record fields and map
keys, never elements of an array nobody keys.
"""

from __future__ import annotations

import copy
import json
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping, Sequence

from datahub.emitter.mce_builder import SYSTEM_ACTOR
from datahub.emitter.mcp_patch_builder import UNIT_SEPARATOR
from datahub.emitter.serialization_helper import post_json_transform, pre_json_transform
from datahub.metadata.schema_classes import ASPECT_NAME_MAP, GenericAspectClass, _Aspect

_OPERATIONS = ("add", "remove", "replace")

# GMS's fine-grained lineage template defaults (FineGrainedLineageTemplateHelper).
_NO_TRANSFORM = "NONE"
_NO_QUERY = "NONE"
_FULL_CONFIDENCE = 1.0


class ArrayTemplate(ABC):
    """How GMS turns one array of an aspect into a map for patching, and back."""

    # Fields GMS's template gives the record holding the array when they are missing.
    record_defaults: Mapping[str, Any] = MappingProxyType({})

    @abstractmethod
    def to_map(self, elements: list[Any]) -> dict[str, Any]:
        """The array as the map patch paths address."""

    @abstractmethod
    def to_array(self, tree: Any) -> list[Any]:
        """The (patched) map as the array the aspect stores."""


@dataclass(frozen=True)
class KeyedArray(ArrayTemplate):
    """An array patched as a map with one nesting level per key field.

    No key fields means an array of strings, each element its own key.
    ``inner`` names keyed arrays inside each element (path from the element).
    """

    keys: tuple[str, ...]
    inner: Mapping[tuple[str, ...], ArrayTemplate] = field(default_factory=dict)
    record_defaults: Mapping[str, Any] = field(default_factory=dict)

    def to_map(self, elements: list[Any]) -> dict[str, Any]:
        tree: dict[str, Any] = {}
        for element in elements:
            if not self.keys:
                tree[_key_text(element)] = element
                continue
            _to_maps(_object(element, "an element"), self.inner)
            node = tree
            for key_field in self.keys[:-1]:
                node = node.setdefault(_key_of(element, key_field), {})
            # Elements with equal keys merge, later fields winning, as in GMS.
            node.setdefault(_key_of(element, self.keys[-1]), {}).update(element)
        return tree

    def to_array(self, tree: Any) -> list[Any]:
        elements = _flatten(tree, self.keys or ("",))
        for element in elements:
            if isinstance(element, dict):
                _to_arrays(element, self.inner)
        return elements


class FineGrainedLineages(ArrayTemplate):
    """``fineGrainedLineages`` as GMS patches it: transformOperation / downstream / query / upstream.

    Each entry must have exactly one downstream (GMS refuses the patch
    otherwise); the leaf of an upstream holds its ``confidenceScore`` and types.
    Rebuilt entries carry every default GMS writes: ``transformOperation``
    ``NONE``, the lowest confidence of their upstreams (at most 1.0) and
    ``FIELD_SET``/``FIELD`` types unless an upstream says otherwise.
    """

    def to_map(self, lineages: list[Any]) -> dict[str, Any]:
        tree: dict[str, Any] = {}
        for lineage in lineages:
            if not isinstance(lineage, dict):
                raise ValueError(f"fine-grained lineage {lineage!r} is not an object")
            downstreams = lineage.get("downstreams") or []
            if len(downstreams) != 1:
                raise ValueError(
                    f"a fine-grained lineage with {len(downstreams)} downstreams cannot be patched "
                    "(GMS keys them by their single downstream)"
                )
            upstreams = lineage.get("upstreams") or []
            of_dataset = bool(upstreams) and str(upstreams[0]).startswith("urn:li:dataset:")
            leaf = {
                "confidenceScore": _confidence(lineage.get("confidenceScore")),
                "upstreamType": lineage.get("upstreamType") or ("DATASET" if of_dataset else "FIELD_SET"),
                "downstreamType": lineage.get("downstreamType") or "FIELD",
            }
            query = (
                tree.setdefault(lineage.get("transformOperation") or _NO_TRANSFORM, {})
                .setdefault(downstreams[0], {})
                .setdefault(lineage.get("query") or _NO_QUERY, {})
            )
            query.update({upstream: dict(leaf) for upstream in upstreams})
        return tree

    def to_array(self, tree: Any) -> list[Any]:
        lineages = []
        for operation, downstreams in _items(tree, "transformOperation"):
            for downstream, queries in _items(downstreams, "downstream"):
                for query, upstreams in _items(queries, "query"):
                    leaves = [_object(leaf, "an upstream") for _, leaf in _items(upstreams, "upstream")]
                    if not leaves:
                        continue
                    scores = [_confidence(leaf.get("confidenceScore")) for leaf in leaves]
                    lineage = {
                        "upstreamType": _last(leaves, "upstreamType", "FIELD_SET"),
                        "upstreams": list(upstreams),
                        "downstreamType": _last(leaves, "downstreamType", "FIELD"),
                        "downstreams": [downstream],
                        "confidenceScore": min([_FULL_CONFIDENCE, *scores]),
                        "transformOperation": operation,
                    }
                    if query and query != _NO_QUERY:
                        lineage["query"] = query
                    lineages.append(lineage)
        return lineages


Templates = Mapping[tuple[str, ...], ArrayTemplate]

_BY_DESTINATION = KeyedArray(("destinationUrn",))
_STRINGS = KeyedArray(())
_TAGS = KeyedArray(("tag",))
# GMS stamps a glossaryTerms record that lacks its required auditStamp with the
# system actor and "now"; time 0 keeps a replayed patch byte-identical.
_TERMS = KeyedArray(("urn",), record_defaults={"auditStamp": {"time": 0, "actor": SYSTEM_ACTOR}})

# aspect -> path of an array inside it -> how GMS keys that array for a plain patch.
TEMPLATES: Mapping[str, Templates] = {
    "upstreamLineage": {
        ("upstreams",): KeyedArray(("dataset",)),
        ("fineGrainedLineages",): FineGrainedLineages(),
    },
    "dataJobInputOutput": {
        ("inputDatajobEdges",): _BY_DESTINATION,
        ("inputDatasetEdges",): _BY_DESTINATION,
        ("outputDatasetEdges",): _BY_DESTINATION,
        ("inputDatasetFields",): _STRINGS,
        ("outputDatasetFields",): _STRINGS,
        ("fineGrainedLineages",): FineGrainedLineages(),
    },
    "chartInfo": {("inputEdges",): _BY_DESTINATION, ("inputs",): _STRINGS},
    "dashboardInfo": {
        ("chartEdges",): _BY_DESTINATION,
        ("datasetEdges",): _BY_DESTINATION,
        ("charts",): _STRINGS,
        ("datasets",): _STRINGS,
    },
    "dataProductProperties": {("assets",): _BY_DESTINATION},
    "siblings": {("siblings",): _STRINGS},
    "domains": {("domains",): _STRINGS},
    "globalTags": {("tags",): _TAGS},
    "glossaryTerms": {("terms",): _TERMS},
    "ownership": {("owners",): KeyedArray(("owner", "type"))},
    "structuredProperties": {("properties",): KeyedArray(("propertyUrn",))},
    "editableSchemaMetadata": {
        ("editableSchemaFieldInfo",): KeyedArray(
            ("fieldPath",),
            inner={("globalTags", "tags"): _TAGS, ("glossaryTerms", "terms"): _TERMS},
        )
    },
}


def patchable_class(aspect_name: str) -> type[_Aspect]:
    """The SDK class of an aspect a PATCH may target; GMS patches no timeseries aspect."""
    aspect_class = ASPECT_NAME_MAP.get(aspect_name)
    if aspect_class is None:
        raise ValueError(f"{aspect_name!r} is not an aspect the DataHub SDK knows")
    if aspect_class.get_aspect_type() == "timeseries":
        raise ValueError(f"{aspect_name} is a timeseries aspect: events are written whole, never patched")
    return aspect_class


def decode_patch(
    aspect: GenericAspectClass | None,
) -> tuple[list[dict[str, Any]], dict[str, list[str]] | None]:
    """The operations of a PATCH proposal, and the array keys it declares.

    The keys are None for a plain list of operations (the aspect's template
    applies) and the ``arrayPrimaryKeys`` of a ``GenericJsonPatch`` envelope
    that has keys or ``forceGenericPatch`` (GMS then uses those keys only).
    The content type is not checked: files written by DataHub's ``file`` sink
    keep the operations but read back as ``application/json``.
    """
    if aspect is None:
        raise ValueError("the PATCH carries no patch")
    try:
        payload = json.loads(aspect.value)
    except ValueError as err:
        raise ValueError(f"the PATCH is not JSON ({err})") from None
    keys: dict[str, list[str]] | None = None
    if isinstance(payload, dict) and isinstance(payload.get("patch"), list):
        declared = payload.get("arrayPrimaryKeys") or {}
        if not isinstance(declared, dict) or not all(
            isinstance(names, list) and all(isinstance(name, str) for name in names)
            for names in declared.values()
        ):
            raise ValueError(f"arrayPrimaryKeys must map array fields to lists of key fields, not {declared!r}")
        if declared or payload.get("forceGenericPatch"):
            keys = declared
        payload = payload["patch"]
    if not isinstance(payload, list) or not all(isinstance(op, dict) for op in payload):
        raise ValueError(
            "the PATCH is neither a list of JSON Patch operations nor a GenericJsonPatch object "
            "(a whole aspect is written with UPSERT)"
        )
    return payload, keys


def apply_patch(
    aspect_name: str,
    current: dict[str, Any] | None,
    operations: Sequence[Mapping[str, Any]],
    array_primary_keys: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, Any]:
    """The aspect JSON after the operations, validated against the SDK's class for it.

    ``current`` and the result are in the JSON form aspects are stored and sent
    in (``pre_json_transform`` of ``to_obj()``); ``current`` is left untouched.
    With no current value the SDK's defaults are patched, with time 0 wherever
    GMS would stamp "now", so replaying a patch onto an empty graph gives the
    same aspect every time.  Anything that cannot be applied raises a
    :class:`ValueError` naming the aspect and the path.
    """
    aspect_class = patchable_class(aspect_name)
    templates: Templates = (
        TEMPLATES.get(aspect_name, {})
        if array_primary_keys is None
        else {(name,): KeyedArray(tuple(keys)) for name, keys in array_primary_keys.items()}
    )
    document = copy.deepcopy(current) if current is not None else _defaults(aspect_class)
    try:
        _to_maps(document, templates)
    except ValueError as err:
        raise ValueError(f"{aspect_name}: the stored aspect cannot be patched: {err}") from None
    for operation in operations:
        try:
            _apply(document, operation)
        except ValueError as err:
            raise ValueError(
                f"{aspect_name}: cannot {operation.get('op')} {operation.get('path')}: {err}"
            ) from None
    try:
        _to_arrays(document, templates)
    except ValueError as err:
        raise ValueError(f"{aspect_name}: the patched aspect cannot be rebuilt: {err}") from None
    return _validated(aspect_class, document, [str(op.get("path")) for op in operations])


def _defaults(aspect_class: type[_Aspect]) -> dict[str, Any]:
    """The SDK's defaults, with what GMS's template writes in place of the SDK's placeholders."""
    # _construct_with_defaults is private, but the SDK has no public way to its defaults.
    document = pre_json_transform(aspect_class._construct_with_defaults().to_obj())
    for template in TEMPLATES.get(aspect_class.ASPECT_NAME, {}).values():
        document.update(copy.deepcopy(dict(template.record_defaults)))
    return document


def _apply(document: dict[str, Any], operation: Mapping[str, Any]) -> None:
    """One operation on the keyed document; missing parents are created, as GMS does.

    GMS also creates the target of a ``remove`` before removing it, so removing
    what is not there is a no-op rather than an error.
    """
    op, path = operation.get("op"), operation.get("path")
    if op not in _OPERATIONS:
        raise ValueError(f"unsupported operation {op!r} (DataHub patches use {', '.join(_OPERATIONS)})")
    if not isinstance(path, str) or not path.startswith("/"):
        raise ValueError("a path is a JSON pointer starting with '/'")
    if op != "remove" and "value" not in operation:
        raise ValueError("the operation has no value")
    tokens = [token.replace("~1", "/").replace("~0", "~") for token in path[1:].split("/")]
    parent = document
    for token in tokens[:-1]:
        parent = _child(parent, token)
    last = tokens[-1]
    if op == "remove":
        parent.pop(last, None)
    elif op == "replace" and last not in parent:
        raise ValueError(f"there is no {last!r} to replace")
    else:
        parent[last] = copy.deepcopy(operation["value"])


def _child(node: dict[str, Any], token: str) -> dict[str, Any]:
    child = node.get(token)
    if child is None:
        child = node[token] = {}
    if isinstance(child, list):
        raise ValueError(
            f"{token!r} is an array this aspect does not key, so its elements have no path "
            "(set the whole array instead)"
        )
    if not isinstance(child, dict):
        raise ValueError(f"{token!r} holds {child!r}, not an object")
    return child


def _to_maps(record: dict[str, Any], templates: Templates) -> None:
    for path, template in templates.items():
        parent = _parent(record, path)
        if parent is None:
            continue
        value = parent.get(path[-1])
        if value is None:
            value = []
        if not isinstance(value, list):
            raise ValueError(f"{'/'.join(path)} is not an array")
        parent[path[-1]] = template.to_map(value)


def _to_arrays(record: dict[str, Any], templates: Templates) -> None:
    """Maps back to arrays; an array a patch set whole (``add /upstreams [...]``) stays as given."""
    for path, template in templates.items():
        parent = _parent(record, path)
        if parent is None:
            continue
        value = parent.get(path[-1])
        if not isinstance(value, list):
            parent[path[-1]] = template.to_array({} if value is None else value)
        for name, default in template.record_defaults.items():
            parent.setdefault(name, copy.deepcopy(default))


def _parent(record: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any] | None:
    node: Any = record
    for name in path[:-1]:
        node = node.get(name) if isinstance(node, dict) else None
    return node if isinstance(node, dict) else None


def _flatten(node: Any, keys: tuple[str, ...]) -> list[Any]:
    """Elements of a keyed map, restoring a plain key field the path alone carried."""
    if isinstance(node, list):
        return list(node)
    if not keys:
        return [node]
    elements = []
    for key, child in _items(node, keys[0] or "element"):
        for element in _flatten(child, keys[1:]):
            if keys[0] and key and UNIT_SEPARATOR not in keys[0] and isinstance(element, dict):
                element.setdefault(keys[0], key)
            elements.append(element)
    return elements


def _items(node: Any, level: str) -> list[tuple[str, Any]]:
    return list(_object(node, f"a map keyed by {level}").items())


def _object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"{what} must be an object, not {value!r}")
    return value


def _key_of(element: dict[str, Any], key_field: str) -> str:
    value: Any = element
    for name in key_field.split(UNIT_SEPARATOR):
        value = value.get(name) if isinstance(value, dict) else None
    return _key_text(value)


def _key_text(value: Any) -> str:
    """A key as GMS's ``asText()`` gives it: missing and structured values are ``""``."""
    if isinstance(value, str):
        return value
    if value is None or isinstance(value, (dict, list)):
        return ""
    return json.dumps(value)


def _last(leaves: list[dict[str, Any]], name: str, default: str) -> str:
    """The value the last upstream gives, as GMS lets the last one win."""
    return next((leaf[name] for leaf in reversed(leaves) if leaf.get(name)), default)


def _confidence(value: Any) -> float:
    """A score as GMS reads it; a missing (or null) one counts as full confidence."""
    numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
    return float(value) if numeric else _FULL_CONFIDENCE


def _validated(aspect_class: type[_Aspect], document: dict[str, Any], paths: list[str]) -> dict[str, Any]:
    """The document as the SDK class stores it; fields the class would silently drop are errors."""
    name = aspect_class.ASPECT_NAME
    try:
        typed = aspect_class.from_obj(post_json_transform(document))
    except Exception as err:  # the codegen raises ValueError, TypeError, AvroTypeException...
        reason = str(err).split(" as union schema ")[0]  # the codegen appends the whole schema
        raise ValueError(
            f"{name}: patching {', '.join(paths)} gives an aspect that does not fit "
            f"{aspect_class.__name__}: {reason}"
        ) from None
    stored = pre_json_transform(typed.to_obj())
    dropped = _dropped(document, stored, "")
    if dropped is not None:
        raise ValueError(f"{name}: {dropped} is not a field of {aspect_class.__name__}")
    return stored


def _dropped(value: Any, kept: Any, pointer: str) -> str | None:
    """The first JSON pointer of ``value`` that did not survive into ``kept``."""
    if isinstance(value, dict) and isinstance(kept, dict):
        for key, item in value.items():
            here = f"{pointer}/{key.replace('~', '~0').replace('/', '~1')}"
            if item is not None and key not in kept:
                return here
            found = _dropped(item, kept.get(key), here)
            if found is not None:
                return found
    elif isinstance(value, list) and isinstance(kept, list):
        for index, (item, kept_item) in enumerate(zip(value, kept)):
            found = _dropped(item, kept_item, f"{pointer}/{index}")
            if found is not None:
                return found
    return None
