"""Aspect JSON into the SDK's classes, compiled once per schema: the same objects ``from_obj`` builds, faster.

The SDK's converter walks the Avro schema afresh for every value: it rebuilds
each record's field table, looks default types up, and validates every union
branch it tries.  On a scan of 10,000 models that was nine tenths of the time
(610,000 aspects, 386 s of 435 s).  Here each schema is turned once into a
closure that does only what the converter would do for that schema.

Equality with the converter is the contract, so the rules are the
converter's own (avrogen ``AvroJsonConverter.from_json_object`` with a
reader schema equal to the writer's, no logical types): a missing field takes
its decoded default, or None when nullable; a union value keyed by a branch
name takes that branch, else the first branch the converter's ``validate``
accepts; records are built as ``_construct`` builds them.  Whatever this
path cannot decode (a value of the wrong shape, say) is decoded again by
``from_obj``, so a malformed aspect fails or succeeds exactly as it did.
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any, Callable, cast

from avro import schema as avro
from avrogen.core_writer import find_type_of_default
from avrogen.dict_wrapper import DictWrapper
from datahub.emitter.serialization_helper import post_json_transform
from datahub.metadata.schema_classes import _Aspect

from recall_dagster.graph.port import AspectT

Decoder = Callable[[Any], Any]

_NULL_VALUE = re.compile(r":\s*null\b")  # a member set to null: the transform drops it
_PRIMITIVES = frozenset({"string", "boolean", "int", "long", "float", "double"})


class _Compiler:
    """Decoders per named schema, shared across every aspect that uses the schema (and safe for recursion)."""

    def __init__(self) -> None:
        from avrogen.avrojson import get_global_json_converter

        self.converter = get_global_json_converter(False)
        self.named: dict[str, Decoder] = {}  # records' decoders by full name, their validators by "?" + name

    def compile(self, s: avro.Schema) -> Decoder:
        kind = s.type
        if kind == "null":
            return lambda value: None
        if kind in _PRIMITIVES or kind in ("fixed", "enum"):
            return lambda value: value
        if kind == "bytes":
            return lambda value: value.encode() if isinstance(value, str) else value
        if kind == "array":
            item = self.compile(cast(avro.ArraySchema, s).items)
            return lambda value: [item(x) for x in value]
        if kind == "map":
            entry = self.compile(cast(avro.MapSchema, s).values)
            return lambda value: {name: entry(v) for name, v in value.items()}
        if kind in ("union", "error_union"):
            return self._union(cast(avro.UnionSchema, s))
        if kind in ("record", "error", "request"):
            return self._record(cast(avro.RecordSchema, s))
        raise TypeError(f"no decoder for Avro type {kind}")

    def _union(self, s: avro.UnionSchema) -> Decoder:
        branches = list(s.schemas)
        decoders = [self.compile(b) for b in branches]
        by_name = {self.converter._fullname(b): d for b, d in zip(branches, decoders)}
        pairs = [(self._accepts(b), d) for b, d in zip(branches, decoders)]

        def decode(value: Any) -> Any:
            if value is None:
                return None
            if isinstance(value, dict) and len(value) == 1:
                (name, inner), = value.items()
                if name in by_name:
                    return by_name[name](inner)
            for accepts, decoder in pairs:
                if accepts(value):
                    return decoder(value)
            raise ValueError(f"no branch of {s} takes {value!r}")

        return decode

    def _accepts(self, s: avro.Schema) -> Callable[[Any], bool]:
        """The converter's ``validate`` for schema ``s``, compiled the same way (it decides union branches)."""
        kind = s.type
        if kind == "null":
            return lambda value: value is None
        if kind == "string":
            return lambda value: isinstance(value, str)
        if kind == "enum":  # the schema's own check (``datum in self.symbols``), without its per-call lookups
            symbols = tuple(cast(avro.EnumSchema, s).symbols)
            return lambda value: value in symbols
        if kind == "array":
            item = self._accepts(cast(avro.ArraySchema, s).items)
            return lambda value: isinstance(value, list) and all(item(x) for x in value)
        if kind == "map":
            entry = self._accepts(cast(avro.MapSchema, s).values)
            return lambda value: (isinstance(value, dict) and all(isinstance(k, str) for k in value)
                                  and all(entry(v) for v in value.values()))
        if kind in ("union", "error_union"):
            u = cast(avro.UnionSchema, s)
            branches = [(self.converter._fullname(b), self._accepts(b)) for b in u.schemas]
            by_record, unnamed = record_branches(u)
            nullable = any(b.type == "null" for b in u.schemas)

            def union(value: Any) -> bool:
                if value is None:  # only a null branch takes it
                    return nullable
                if isinstance(value, DictWrapper):  # an SDK object: the branch of its own record, if there is one
                    found = by_record.get(value.RECORD_SCHEMA.fullname)
                    if found is not None:
                        return branches[found][1](value)
                    if unnamed:
                        raise TypeError(f"the converter cannot match a {type(value).__name__} to {s}")
                if isinstance(value, dict) and len(value) == 1:
                    (key, inner), = value.items()
                    if any(name == key and accepts(inner) for name, accepts in branches):
                        return True
                return any(accepts(value) for _, accepts in branches)

            return union
        if kind in ("record", "error", "request"):
            r = cast(avro.RecordSchema, s)
            name = "?" + r.fullname.lstrip(".")
            if name not in self.named:
                checks: list[tuple[str, Callable[[Any], bool], bool, Any]] = []
                self.named[name] = lambda value: (
                    all(accepts(value.get(field, default) if has_default else value.get(field))
                        for field, accepts, has_default, default in checks) if isinstance(value, dict)
                    else isinstance(value, DictWrapper)
                    and all(accepts(value._inner_dict.get(field)) for field, accepts, _, _ in checks)
                )
                checks.extend((f.name, self._accepts(f.type), f.has_default, f.default) for f in r.fields)
            return self.named[name]
        if type(s) is avro.PrimitiveSchema and kind != "bytes":  # the converter defers these to the schema's own check
            return avro.PrimitiveSchema._validators[kind]
        validate = self.converter.validate
        return lambda value: validate(s, value, skip_logical_types=True)

    def _record(self, s: avro.RecordSchema) -> Decoder:
        name = s.fullname.lstrip(".")
        if name in self.named:
            return self.named[name]
        fields: list[tuple[str, Decoder, Callable[[], Any] | None, bool]] = []
        cls = self.converter.schema_types.get(name) or self.converter.schema_types.get(s.name)

        def decode(value: Any) -> Any:
            if not isinstance(value, dict):
                raise TypeError(f"{name} wants an object, not {type(value).__name__}")
            record = {}
            for field, decoder, default, nullable in fields:
                if field in value:
                    record[field] = decoder(value[field])
                elif default is not None:
                    record[field] = default()
                elif nullable:
                    record[field] = None
                else:
                    raise ValueError(f"{name} is missing required field: {field}")
            return build(record)

        self.named[name] = decode  # before the fields: a record may hold itself
        for f in s.fields:
            decoder = self.compile(f.type)
            default = (lambda d=f.default, dec=decoder: dec(d)) if f.has_default else None
            fields.append((f.name, decoder, default, find_type_of_default(f.type)[1]))
        build = self._builder(cls)
        return decode

    @staticmethod
    def _builder(cls: type[DictWrapper] | None) -> Callable[[dict], Any]:
        """``_construct``, skipped where it would change nothing: it restores defaults and then keeps them only
        for the fields the record left None."""
        if cls is None:
            return lambda record: record
        restored = cls._construct_with_defaults()._inner_dict
        kept = frozenset(k for k, v in restored.items() if v is not None)
        known = frozenset(restored)

        def build(record: dict) -> Any:
            if record.keys() != known or any(record[k] is None for k in kept):
                return cls._construct(record)
            obj = cls.__new__(cls)
            obj._inner_dict = record
            return obj

        return build


_COMPILER: _Compiler | None = None
_DECODERS: dict[type, Decoder] = {}
_COMPILING = threading.Lock()  # a record's decoder is registered before its fields are: never share it half-built


def _compiler() -> _Compiler:
    """The one compiler, made on first use; call it holding ``_COMPILING``."""
    global _COMPILER
    if _COMPILER is None:
        _COMPILER = _Compiler()
    return _COMPILER


def compiled(aspect_class: type[_Aspect]) -> Decoder:
    """The compiled decoder of ``aspect_class``; it raises for anything it cannot decode."""
    decoder = _DECODERS.get(aspect_class)
    if decoder is None:
        with _COMPILING:
            decoder = _DECODERS.setdefault(aspect_class, _compiler().compile(aspect_class.RECORD_SCHEMA))
    return decoder


_READERS: dict[tuple[type, str], Decoder] = {}
TRANSFORM_MARKERS = ('"com.linkedin.', '"costType"')  # in text the SDK's transform would change beyond dropping nulls


def value_reader(aspect_class: type[_Aspect], path: str) -> Decoder:
    """The value at dotted ``path`` of an ``aspect_class`` JSON as the SDK's object holds it (a union's
    branch unwrapped), or a ValueError when it does not fit the field's schema; None stands where a step on
    the way is optional.

    Only paths whose every step is a record field with no default but null are taken: elsewhere an absent
    value would decode to a default the JSON does not hold.
    """
    key = (aspect_class, path)
    if key not in _READERS:
        with _COMPILING:
            _READERS[key] = _reader(_compiler(), aspect_class, path)
    return _READERS[key]


def _reader(compiler: _Compiler, aspect_class: type[_Aspect], path: str) -> Decoder:
    schema: avro.Schema = aspect_class.RECORD_SCHEMA
    optional = False
    for step in path.split("."):
        if schema.type in ("union", "error_union"):
            optional = True
            records = [b for b in cast(avro.UnionSchema, schema).schemas if b.type != "null"]
            if len(records) != 1:
                raise ValueError(f"{aspect_class.ASPECT_NAME}: {path} crosses a union of several branches")
            schema = records[0]
        fields = {f.name: f for f in getattr(schema, "fields", ())}
        if step not in fields:
            raise ValueError(f"{aspect_class.ASPECT_NAME} has no field {path}")
        if fields[step].has_default and fields[step].default is not None:
            raise ValueError(f"{aspect_class.ASPECT_NAME}: {path} has a default the JSON may leave out")
        schema = fields[step].type
    accepts, decode = compiler._accepts(schema), compiler.compile(schema)

    def read(value: Any) -> Any:
        if value is None and optional:
            return None
        if not accepts(value):
            raise ValueError(f"{path} holds {value!r}, which its schema ({schema.type}) does not take")
        return decode(value)

    return read


def transformed(text: str) -> bool:
    """Whether aspect JSON needs the SDK's transform for more than dropping nulls (so a value read at a path
    of the raw text may not be the object's)."""
    return any(marker in text for marker in TRANSFORM_MARKERS)


def record_branches(union: avro.UnionSchema) -> tuple[dict[str, int], bool]:
    """The converter's match of an SDK object to a union branch by its record's name: the first branch of each
    name, up to the first branch with no name (an array or a map), where the converter fails; and whether
    there is such a branch."""
    found: dict[str, int] = {}
    for i, branch in enumerate(union.schemas):
        if not hasattr(branch, "fullname"):
            return found, True
        found.setdefault(branch.fullname, i)
    return found, False


def accepts(s: avro.Schema) -> Callable[[Any], bool]:
    """The converter's ``validate`` for schema ``s``, compiled: JSON values and the SDK's objects alike."""
    with _COMPILING:
        return _compiler()._accepts(s)


def decode_aspect(aspect_class: type[AspectT], obj: Any) -> AspectT:
    """``aspect_class.from_obj(obj)``, through the compiled decoder whenever it can decode ``obj``."""
    try:
        return compiled(aspect_class)(obj)
    except Exception:  # the SDK's own converter decides what a malformed value becomes
        return aspect_class.from_obj(obj)


def aspect_from_text(aspect_class: type[AspectT], text: str) -> AspectT:
    """An aspect from the JSON a store keeps (DataHub's wire form), as ``post_json_transform`` then
    ``from_obj`` would build it.

    The transform renames union keys, restores the one aliased union (cost) and
    drops nulls; text holding none of those is left as it is, which is most of it.
    """
    obj = json.loads(text)
    if transformed(text) or _NULL_VALUE.search(text):
        obj = post_json_transform(obj)
    return decode_aspect(aspect_class, obj)
