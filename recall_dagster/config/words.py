"""What a key of ``recall.yaml`` must be, in the file's own words: for mistakes and for the reference.

The models hold the truth (types, bounds, what is a section); a person reads
"a finite number in [0, 1]" or "a list of strings", so both the error that
names a bad value and the generated reference describe a key from here.
"""

from __future__ import annotations

import reprlib
from enum import Enum
from types import UnionType
from typing import Annotated, Any, Mapping, Sequence, Union, get_args, get_origin

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from recall_dagster.config.models import RecallFile


def kind(value: Any) -> str:
    """What a YAML value is, in the file's words."""
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Mapping):
        return "a mapping"
    return "null"


def _unwrap(annotation: Any, metadata: list[Any]) -> tuple[Any, list[Any]]:
    while get_origin(annotation) is Annotated:
        annotation, *more = get_args(annotation)
        for extra in more:
            metadata = [*metadata, *(extra.metadata if isinstance(extra, FieldInfo) else [extra])]
    return annotation, metadata


def at(path: Sequence[str]) -> tuple[Any, list[Any]]:
    """The type the file's key ``path`` holds, with its constraints; a mapping's keys step to its values."""
    annotation: Any = RecallFile
    metadata: list[Any] = []
    for part in path:
        annotation, metadata = _unwrap(annotation, metadata)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            field = annotation.model_fields.get(part)
            if field is None:
                return None, []
            annotation, metadata = field.annotation, list(field.metadata)
        elif get_origin(annotation) is dict:
            annotation, metadata = get_args(annotation)[1], []
        elif get_origin(annotation) is list:
            annotation, metadata = get_args(annotation)[0], []
        else:
            return None, []
    return _unwrap(annotation, metadata)


def _numeric(annotation: Any, metadata: list[Any]) -> str:
    lower = next(((m.ge, "[") for m in metadata if isinstance(m, annotated_types.Ge)), None) or next(
        ((m.gt, "(") for m in metadata if isinstance(m, annotated_types.Gt)), None)
    upper = next(((m.le, "]") for m in metadata if isinstance(m, annotated_types.Le)), None) or next(
        ((m.lt, ")") for m in metadata if isinstance(m, annotated_types.Lt)), None)
    base = "an integer" if annotation is int else "a finite number"
    if lower and upper:
        return f"{base} in {lower[1]}{lower[0]:g}, {upper[0]:g}{upper[1]}"
    if lower:
        return f"{base} {'>=' if lower[1] == '[' else '>'} {lower[0]:g}"
    if upper:
        return f"{base} {'<=' if upper[1] == ']' else '<'} {upper[0]:g}"
    return base


def described(annotation: Any, metadata: list[Any]) -> str:
    """``annotation`` (with its constraints) as a person would say what a value must be."""
    annotation, metadata = _unwrap(annotation, metadata)
    if get_origin(annotation) in (Union, UnionType):
        options = [a for a in get_args(annotation) if a is not type(None)]
        return " or ".join(described(a, []) for a in options) + " or null"
    if annotation in (int, float):
        return _numeric(annotation, metadata)
    if annotation is bool:
        return "true or false"
    if annotation is str:
        return "a non-empty string" if any(getattr(m, "min_length", None) for m in metadata) else "a string"
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return "one of " + ", ".join(m.value for m in annotation)
    if get_origin(annotation) is list:
        return "a list of strings"
    if get_origin(annotation) is dict:
        return f"a mapping of names to {described(get_args(annotation)[1], [])}"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "a mapping"
    return "something else"


def expected(path: Sequence[str]) -> str:
    """What the key ``path`` must be, as the file would say it."""
    return described(*at(path))


_EXCERPT = reprlib.Repr()  # its limits as attributes: Python 3.11's takes no arguments
_EXCERPT.maxlevel, _EXCERPT.maxstring, _EXCERPT.maxother = 2, 80, 80
_EXCERPT.maxtuple = _EXCERPT.maxlist = _EXCERPT.maxdict = _EXCERPT.maxset = 4
_EXCERPT_CHARS = 200


def excerpt(value: object) -> str:
    """A bad value as an error quotes it: a bounded excerpt, whatever its size (a YAML alias bomb expands to
    hundreds of megabytes of text when printed whole)."""
    text = _EXCERPT.repr(value)
    return text if len(text) <= _EXCERPT_CHARS else text[:_EXCERPT_CHARS] + "..."
