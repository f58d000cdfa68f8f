"""How the resolver reads an estate, as ``recall.yaml`` configures it: a plain value the configuration
builds and the resolver is handed, so a detector's configuration names it without importing the reader."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ResolveOptions:
    """What the resolver needs from configuration (see ``closure:`` and ``production:`` in recall.yaml)."""

    max_depth: int
    live_statuses: frozenset[str]
    production_aliases: frozenset[str]
    production_tags: frozenset[str]
    freshness_property: str | None
    feature_column_properties: tuple[str, ...]
    history_limit: int
