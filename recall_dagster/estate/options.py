"""How an estate is read and followed, as ``recall.yaml`` configures it: plain values the configuration
builds and the resolver and the reach rule are handed, so a detector's configuration names them without
importing either."""

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


@dataclass(frozen=True)
class ReachOptions:
    """How far a failing test is followed to the models it reaches (``lifecycle:`` in recall.yaml)."""

    table_level: bool = True  # a test naming no column poisons every column of its table
    name_matching: bool = True  # a feature naming no column is matched to a poisoned column of its name
