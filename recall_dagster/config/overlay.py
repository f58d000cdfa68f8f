"""How a team's ``recall.yaml`` lies over the shipped one: written down once, used by every layer.

Mappings merge key by key with the overlay's keys first, so a team's
first-match globs (``not_null_payment*`` before the shipped ``not_null*``) win;
anything else is replaced; a mapping saying ``replace: true`` stands instead of
the shipped one whole (a team's own tiers).
"""

from __future__ import annotations

from typing import Any, Mapping

from recall_dagster.config.words import excerpt
from recall_dagster.errors import ConfigError

REPLACE = "replace"  # ``replace: true`` in an overlay's mapping: it stands instead of the shipped one


def check_replace(layer: Mapping[str, Any], source: str, where: str = "") -> None:
    """Refuse a ``replace:`` that is not true or false before it is laid: after, no model could say whose it was."""
    for key, value in layer.items():
        path = f"{where}.{key}" if where else str(key)
        if key == REPLACE and not isinstance(value, bool):
            raise ConfigError(f"{source}: `{path}` must be true or false, not {excerpt(value)}")
        if isinstance(value, Mapping):
            check_replace(value, source, path)


def merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """``override`` laid over ``base``: mappings merged key by key, the overlay's keys first (in a first-match
    mapping, a team's ``not_null_payment*`` comes before the shipped ``not_null*``), anything else replaced; a
    mapping of the overlay that says ``replace: true`` replaces the shipped one whole (a team's own tiers)."""
    if override.get(REPLACE) is True:
        return merge({}, {k: v for k, v in override.items() if k != REPLACE})
    merged: dict[str, Any] = {}
    for key, value in override.items():
        if key == REPLACE:
            continue
        if isinstance(value, Mapping) and isinstance(base.get(key), Mapping):
            merged[key] = merge(base[key], value)
        else:
            merged[key] = value
    for key, value in base.items():
        merged.setdefault(key, value)
    return merged
