"""SDK aspects into the JSON ``to_obj`` gives, compiled once per schema: the writing side of :mod:`decode`.

Writing a Lite file spent more than half its time in the SDK's converter
(``to_obj``): for every record it decodes each field's default afresh, and it
validates the whole aspect and then every union branch it tries by walking the
Avro schema again.  Here each schema is turned once into a closure that does
only what the converter does for that schema.

Equality with the converter is the contract, so the rules are its own
(avrogen ``AvroJsonConverter.to_json_object``, no logical types, no tuples): the
aspect is validated whole first; a record leaves out a field whose default is
null while its value is None; a union takes the branch named by the value's
record class, else the last branch that validates it (the first, for a
boolean); a union with one branch besides null, or an enum and null, is written
bare unless inside an array, and every other one keyed by the branch's name.
A record this path cannot encode is handed to ``to_obj``, which fails or
succeeds exactly as it did.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, cast

from avro import schema as avro
from avrogen.dict_wrapper import DictWrapper

from recall_dagster.graph.decode import accepts, record_branches

Encoder = Callable[[Any], Any]

_BARE = frozenset({"null", "boolean", "int", "long", "float", "double", "string", "fixed", "enum"})


class _Compiler:
    def __init__(self) -> None:
        from avrogen.avrojson import get_global_json_converter

        self.converter = get_global_json_converter(False)
        self.records: dict[str, Encoder] = {}

    def compile(self, s: avro.Schema, within_array: bool = False) -> Encoder:
        kind = s.type
        if kind in _BARE:
            return lambda value: value
        if kind == "bytes":
            return lambda value: value.decode() if isinstance(value, bytes) else value
        if kind == "array":
            item = self.compile(cast(avro.ArraySchema, s).items, within_array=True)
            return lambda value: [item(x) for x in value]
        if kind == "map":
            entry = self.compile(cast(avro.MapSchema, s).values)
            return lambda value: {name: entry(x) for name, x in value.items()}
        if kind in ("union", "error_union"):
            return self._union(cast(avro.UnionSchema, s), within_array)
        if kind in ("record", "error", "request"):
            return self._record(cast(avro.RecordSchema, s))
        raise TypeError(f"no encoder for Avro type {kind}")

    def _union(self, s: avro.UnionSchema, within_array: bool) -> Encoder:
        branches = list(s.schemas)
        encoders = [self.compile(b) for b in branches]
        checks = [accepts(b) for b in branches]
        names = [self.converter._fullname(b) for b in branches]
        by_record, unnamed = record_branches(s)
        bare = not within_array and self.converter._is_unambiguous_union(s)

        def encode(value: Any) -> Any:
            record = getattr(type(value), "RECORD_SCHEMA", None)
            index = by_record.get(record.fullname, -1) if record is not None else -1
            if index < 0 and record is not None and unnamed:
                raise TypeError(f"the converter cannot match a {type(value).__name__} to {s}")
            if index < 0:
                for i, check in enumerate(checks):
                    if check(value):
                        index = i
                        if branches[i].type == "boolean":
                            break
            if index < 0:
                raise ValueError(f"no branch of {s} takes {value!r}")
            if branches[index].type == "null":
                return None
            written = encoders[index](value)
            return written if bare else {names[index]: written}

        return encode

    def _record(self, s: avro.RecordSchema) -> Encoder:
        name = s.fullname.lstrip(".")
        if name in self.records:
            return self.records[name]
        fields: list[tuple[str, Encoder, bool, Any]] = []

        def encode(value: Any) -> Any:
            written = {}
            for field, encoder, has_default, default in fields:
                if has_default:
                    found = value.get(field, default)
                    if found is None and default is None:
                        continue
                else:
                    found = value.get(field)
                written[field] = encoder(found)
            return written

        self.records[name] = encode  # before the fields: a record may hold itself
        for f in s.fields:
            default = self.converter.from_json_object(f.default, f.type) if f.has_default else None
            fields.append((f.name, self.compile(f.type), f.has_default, default))
        return encode


_COMPILER: _Compiler | None = None
_ENCODERS: dict[type, tuple[Callable[[Any], bool], Encoder]] = {}
_COMPILING = threading.Lock()  # a record's encoder is registered before its fields are: never share it half-built


def to_obj(record: DictWrapper) -> dict[str, Any]:
    """``record.to_obj()`` (an aspect, system metadata...), through the compiled encoder whenever it can
    encode the record."""
    global _COMPILER
    cls = type(record)
    compiled = _ENCODERS.get(cls)
    if compiled is None:
        with _COMPILING:
            if _COMPILER is None:
                _COMPILER = _Compiler()
            compiled = _ENCODERS.setdefault(cls, (accepts(cls.RECORD_SCHEMA), _COMPILER.compile(cls.RECORD_SCHEMA)))
    valid, encode = compiled
    try:
        if valid(record):
            return encode(record)
    except Exception:  # the SDK's own converter decides what an unfit record becomes
        pass
    return record.to_obj()
