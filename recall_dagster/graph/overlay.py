"""A graph seen through an adapter: every read and write passes to the graph beneath, but for what the adapter
changes (the registry's facts on model versions, far-side links kept from the last scan)."""

from __future__ import annotations

from typing import Any, Iterable, Sequence

from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata.schema_classes import _Aspect

from recall_dagster.graph.port import AspectMap, AspectT, Changes, Direction, MetadataGraph, WriteReport


class Overlay:
    """A :class:`MetadataGraph` passing everything to ``graph``; subclasses override what they answer."""

    def __init__(self, graph: MetadataGraph) -> None:
        self._graph = graph

    @property
    def location(self) -> str:
        return self._graph.location

    def get_aspects(self, urns: Sequence[str], aspects: Sequence[type[_Aspect]] | None = None) -> AspectMap:
        return self._graph.get_aspects(urns, aspects)

    def related(self, urns: Sequence[str], relationship: str, direction: Direction = "outgoing") -> dict[str, list[str]]:
        return self._graph.related(urns, relationship, direction)

    def timeseries(self, urns: Sequence[str], aspect: type[AspectT], limit: int = 100) -> dict[str, list[AspectT]]:
        return self._graph.timeseries(urns, aspect, limit)

    def timeseries_values(
        self, urns: Sequence[str], aspect: type[_Aspect], paths: Sequence[str], limit: int = 100
    ) -> dict[str, list[tuple[Any, ...]]]:
        return self._graph.timeseries_values(urns, aspect, paths, limit)

    def list_urns(self, entity_type: str) -> list[str]:
        return self._graph.list_urns(entity_type)

    def changes_since(self, token: str | None) -> Changes:
        return self._graph.changes_since(token)

    def emit_mcps(self, mcps: Iterable[MetadataChangeProposalWrapper]) -> WriteReport:
        return self._graph.emit_mcps(mcps)

    def close(self) -> None:
        self._graph.close()
