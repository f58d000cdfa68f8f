"""Every layer of ``recall.yaml`` checked against the shipped file's shape before anything reads it.

The shipped ``recall.yaml`` is the schema: a key it does not have is a typo
(``scroe:`` for ``score:``), and a section where it has a mapping must be a
mapping, a list a list, a number a number.  Only the sections that are maps by
design (tier names, metric names, globs, classifications) take keys of the
user's choosing.  The error names the key, its file, and the nearest valid key,
so a typo fails loudly instead of being silently ignored.  Ranges are the
section parsers' business; they name the key too.
"""

from __future__ import annotations

from difflib import get_close_matches
from fnmatch import fnmatchcase
from typing import Any, Mapping

from recall_dagster.config.overlay import REPLACE, merge
from recall_dagster.errors import ConfigError

# Dotted paths whose keys the user chooses; their values are still checked against the first shipped entry's shape.
OPEN_MAPPINGS = frozenset({
    "freshness.windows",
    "scoring.tiers",
    "detectors",
    "lifecycle.severity.bands",
    "lifecycle.severity.priorities",
    "lifecycle.classification",
    "lifecycle.row_counts",
    "impact.measured.failing_assertion",
    "diagnose.metrics",
})
# Dotted paths whose value may be anything the section parser accepts (a mapping or null, say).
FREE = frozenset({"freshness.windows"})
# Keys the parsers accept that the shipped file leaves out, by a glob over the dotted path.
OPTIONAL = {"detectors.*.enabled": True}


def _kind(value: Any) -> str:
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


def _suggest(key: str, known: list[str]) -> str:
    close = get_close_matches(key, known, n=1, cutoff=0.5)
    return f"; did you mean `{close[0]}`?" if close else f"; known keys: {', '.join(sorted(known))}"


def _entry_shape(schema: Mapping[str, Any]) -> Any:
    """What any entry of an open mapping may hold: every shipped entry's keys together, or the first scalar."""
    first = next(iter(schema.values()), None)
    if not isinstance(first, Mapping):
        return first
    union: dict[str, Any] = {}
    for value in schema.values():
        if isinstance(value, Mapping):
            union = merge(union, value)
    return union


def validate_layer(layer: Mapping[str, Any], schema: Mapping[str, Any], source: str, where: str = "") -> None:
    """Raise a :class:`ConfigError` for the first key of ``layer`` the shipped ``schema`` does not allow."""
    shape = _entry_shape(schema) if where in OPEN_MAPPINGS else None
    for key, value in layer.items():
        path = f"{where}.{key}" if where else str(key)
        if key == REPLACE and where in OPEN_MAPPINGS:
            if not isinstance(value, bool):
                raise ConfigError(f"{source}: `{path}` must be true or false, not {_kind(value)} ({value!r})")
            continue
        if where in OPEN_MAPPINGS:
            template = shape
        elif key in schema:
            template = schema[key]
        elif optional := next((t for glob, t in OPTIONAL.items() if fnmatchcase(path, glob)), None):
            template = optional
        else:
            optional = [g.rsplit(".", 1)[1] for g in OPTIONAL if fnmatchcase(where, g.rsplit(".", 1)[0])]
            raise ConfigError(f"{source}: unknown key `{path}`{_suggest(str(key), [*map(str, schema), *optional])}")
        _check(value, template, source, path)


def _check(value: Any, template: Any, source: str, path: str) -> None:
    if template is None or path in FREE:
        return
    if isinstance(template, Mapping):
        if not isinstance(value, Mapping):
            raise ConfigError(f"{source}: `{path}` must be a mapping, not {_kind(value)}")
        validate_layer(value, template, source, path)
        return
    if value is None and path in OPEN_MAPPINGS:
        return
    if _kind(value) != _kind(template) and not (value is None and isinstance(template, (list, str))):
        raise ConfigError(f"{source}: `{path}` must be {_kind(template)}, not {_kind(value)} ({value!r})")
