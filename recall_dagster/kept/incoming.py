"""The links the resolver reads from their far side, kept from the last scan and brought up to date by what
changed since, so a rescan asks the graph only about what it never asked before.

A dataset's assertions, the runs that write it and a feature's tables are
stored on the assertion, the run, the table: finding them in DataHub Lite means
reading every row of the carrying aspect, whatever the number of datasets
asked about (a quarter of a rescan that read five models again at 10,000
models).  The last scan asked about every dataset and feature it resolved, and
only an entity written since can have gained or lost such a link, since the
link lives in the writer's own aspect: so the answer now is the answer then,
with every changed entity taken out and put back where its aspects, as they
are now, point.  A target the last scan never asked about is asked of the
graph.  Tests compare every incremental resolve with a full one.
"""

from __future__ import annotations

from typing import Iterable, Protocol, Sequence

from recall_dagster.graph.overlay import Overlay
from recall_dagster.graph.port import Direction, MetadataGraph

Key = tuple[str, str]  # (relationship, target)


class Answers(Protocol):
    """The last scan's answers, asked by key (:class:`~recall_dagster.kept.links.KeptLinks` gives them)."""

    def incoming(self, keys: Iterable[Key]) -> dict[Key, tuple[str, ...]]:
        """Of ``keys``, those asked about then: their sources, sorted."""

    def holding(self, sources: Iterable[str]) -> set[Key]:
        """The answers whose sources hold one of ``sources``."""

    def relationships(self) -> frozenset[str]:
        """The relationships asked about."""


class KnownIncoming(Overlay):
    """A :class:`MetadataGraph` that answers incoming links from ``known`` (the last scan's answers) with the
    ``changed`` entities' links as they are now, asks the graph the rest, and keeps every answer it gave."""

    def __init__(self, graph: MetadataGraph, known: Answers, changed: Iterable[str] = ()) -> None:
        super().__init__(graph)
        self._known = known
        self._changed = frozenset(changed)
        self._out: dict[str, dict[str, set[str]]] = {}  # relationship -> changed entity -> its targets now
        self._asked: dict[Key, tuple[str, ...]] = {}
        self._brought: dict[Key, tuple[str, ...]] | None = None

    def related(self, urns: Sequence[str], relationship: str, direction: Direction = "outgoing") -> dict[str, list[str]]:
        if direction != "incoming":
            return self._graph.related(urns, relationship, direction)
        known = self._known.incoming((relationship, u) for u in urns)
        unknown = [u for u in urns if (relationship, u) not in known]
        asked = self._graph.related(unknown, relationship, "incoming") if unknown else {}
        found = {u: tuple(asked.get(u, ())) if (relationship, u) not in known
                 else self._now(relationship, u, known[(relationship, u)]) for u in urns}
        self._asked.update(((relationship, u), s) for u, s in found.items())
        return {u: list(s) for u, s in found.items()}

    def _targets_now(self, relationship: str) -> dict[str, set[str]]:
        if relationship not in self._out:
            read = self._graph.related(sorted(self._changed), relationship, "outgoing") if self._changed else {}
            self._out[relationship] = {s: set(t) for s, t in read.items()}
        return self._out[relationship]

    def _now(self, relationship: str, target: str, sources: tuple[str, ...]) -> tuple[str, ...]:
        """The last scan's ``sources`` of ``target``, each changed entity where its aspects now put it."""
        if not self._changed:
            return sources
        now = self._targets_now(relationship)
        pointing = {s for s, targets in now.items() if target in targets}
        if not pointing and self._changed.isdisjoint(sources):
            return sources  # the kept tuple itself: a snapshot delta leaves it out
        return tuple(sorted({s for s in sources if s not in self._changed} | pointing))

    def changes(self) -> dict[Key, tuple[str, ...]]:
        """The answers that may differ from the last scan's, as they stand now: those a changed entity was or is
        now among, brought up to date, and those asked since."""
        return {**self._moved(), **self._asked}

    def _moved(self) -> dict[Key, tuple[str, ...]]:
        """The last scan's answers a changed entity was or is now among, brought up to date (worked out once)."""
        if self._brought is None:
            moved: set[Key] = set()
            if self._changed:
                moved = self._known.holding(self._changed)
                moved.update((r, t) for r in self._known.relationships()
                             for targets in self._targets_now(r).values() for t in targets)
            self._brought = {k: self._now(*k, sources) for k, sources in self._known.incoming(moved).items()}
        return self._brought
