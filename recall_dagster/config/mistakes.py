"""A mistake in ``recall.yaml`` told as a person fixes it: the file, the key, what it must be, the nearest key.

Pydantic reports where the merged file broke a model; a team needs the layer
that wrote the bad value (their file, not the shipped one), the dotted key, and
the expectation in the file's own words ("a finite number in [0, 1]", "a list").
"""

from __future__ import annotations

from difflib import get_close_matches
from typing import Any, Mapping, Sequence

from pydantic import BaseModel, ValidationError

from recall_dagster.config.fields import KeyMistake
from recall_dagster.config.words import at, excerpt, expected, kind
from recall_dagster.errors import ConfigError

Layer = tuple[str, Mapping[str, Any]]  # a file's name and what it says


def _keys_at(path: Sequence[str]) -> list[str]:
    annotation, _ = at(path)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return list(annotation.model_fields)
    return []


def _suggest(key: str, known: list[str]) -> str:
    close = get_close_matches(key, known, n=1, cutoff=0.5)
    if close:
        return f"; did you mean `{close[0]}`?"
    return f"; known keys: {', '.join(sorted(known))}" if known else ""


def _said_by(path: Sequence[str], layers: Sequence[Layer]) -> str:
    """The last layer that wrote ``path`` (or the deepest part of it), where a team looks to fix it."""
    best, depth = layers[-1][0], -1
    for source, data in layers:
        node: Any = data
        reached = 0
        for part in path:
            if not isinstance(node, Mapping) or part not in node:
                break
            node, reached = node[part], reached + 1
        if reached >= depth and reached > 0:
            best, depth = source, reached
    return best


def explain(error: ValidationError, layers: Sequence[Layer]) -> ConfigError:
    """The first thing ``error`` found, as a :class:`ConfigError` naming the layer, the key and the fix."""
    problem = error.errors(include_url=False)[0]
    path = [str(p) for p in problem["loc"] if p != "[key]"]
    cause = (problem.get("ctx") or {}).get("error")
    if isinstance(cause, KeyMistake):
        path += cause.key.split(".")
    where = ".".join(path)
    source = _said_by(path, layers)
    value = problem.get("input")
    kind_of = problem["type"]
    if kind_of == "missing":
        return ConfigError(f"{source}: `{where}` is missing")
    if kind_of == "extra_forbidden":
        return ConfigError(f"{source}: unknown key `{where}`{_suggest(path[-1], _keys_at(path[:-1]))}")
    if cause is not None:
        message = cause.message if isinstance(cause, KeyMistake) else str(cause)  # a KeyMistake reads as a predicate
        joint = " " if isinstance(cause, KeyMistake) or message.startswith(("must", "names", "is ")) else ": "
        return ConfigError(f"{source}: `{where}`{joint}{message}")
    if "[key]" in problem["loc"]:
        return ConfigError(f"{source}: `{where}` is not a key here: {problem['msg'].replace('Input should be', 'it must be')}")
    said = excerpt(value)
    shown = f", not {kind(value)} ({said})" if kind(value) != "a number" or kind_of.endswith("_type") else f", not {said}"
    return ConfigError(f"{source}: `{where}` must be {expected(path)}{shown}")
