"""Reads that survive a flaky server: each call retried on its own, with the policy's backoff.

Planning makes a dozen reads; retrying the whole plan when one fails would,
on a server failing one request in ten, never finish.  So each read is
retried alone, and an aspect read is split by entity type first: GMS serves
each type from its own request, and one failed request should not send the
others again.
"""

from __future__ import annotations

import time
from functools import partial
from typing import Any, Callable, Iterable, Sequence, TypeVar

from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata.schema_classes import _Aspect
from datahub.utilities.urns.urn import guess_entity_type

from recall_dagster.errors import GraphError, ServiceUnreachable
from recall_dagster.graph.port import AspectMap, AspectT, Changes, Direction, MetadataGraph, WriteReport
from recall_dagster.writeback.config import RetryPolicy

T = TypeVar("T")


class RetryingReads:
    """A :class:`MetadataGraph` whose reads retry; writes pass straight through (``emit`` retries those)."""

    def __init__(
        self, graph: MetadataGraph, policy: RetryPolicy, sleep: Callable[[float], None] = time.sleep
    ) -> None:
        self._graph, self._policy, self._sleep = graph, policy, sleep
        self._waited = 0.0  # across every read of the run: the policy's budget bounds them together

    def _retry(self, call: Callable[[], T]) -> T:
        """``call()``, tried up to ``policy.attempts`` times while it fails as a server does (5xx, no answer),
        while the run's waiting stays within the policy's budget."""
        failures = 0
        while True:
            try:
                return call()
            except (ServiceUnreachable, GraphError):
                failures += 1
                wait = self._policy.next_wait(failures, self._waited)
                if wait is None:
                    raise
                self._waited += wait
                self._sleep(wait)

    @property
    def location(self) -> str:
        return self._graph.location

    def get_aspects(self, urns: Sequence[str], aspects: Sequence[type[_Aspect]] | None = None) -> AspectMap:
        by_type: dict[str, list[str]] = {}
        for urn in urns:
            by_type.setdefault(guess_entity_type(urn), []).append(urn)
        found: AspectMap = {}
        for group in by_type.values():
            found.update(self._retry(partial(self._graph.get_aspects, group, aspects)))
        return {urn: found[urn] for urn in urns}

    def related(
        self, urns: Sequence[str], relationship: str, direction: Direction = "outgoing"
    ) -> dict[str, list[str]]:
        return self._retry(lambda: self._graph.related(urns, relationship, direction))

    def timeseries(self, urns: Sequence[str], aspect: type[AspectT], limit: int = 100) -> dict[str, list[AspectT]]:
        return self._retry(lambda: self._graph.timeseries(urns, aspect, limit))

    def timeseries_values(
        self, urns: Sequence[str], aspect: type[_Aspect], paths: Sequence[str], limit: int = 100
    ) -> dict[str, list[tuple[Any, ...]]]:
        return self._retry(lambda: self._graph.timeseries_values(urns, aspect, paths, limit))

    def list_urns(self, entity_type: str) -> list[str]:
        return self._retry(lambda: self._graph.list_urns(entity_type))

    def changes_since(self, token: str | None) -> Changes:
        return self._retry(lambda: self._graph.changes_since(token))

    def emit_mcps(self, mcps: Iterable[MetadataChangeProposalWrapper]) -> WriteReport:
        return self._graph.emit_mcps(mcps)

    def close(self) -> None:
        self._graph.close()
