"""The graph's lists of models, model groups and assertions, kept from the last scan and brought up to date by
what changed since, so a rescan does not list them again.

Listing every assertion in DataHub Lite reads every row under their URNs, run
events included (378,000 of them at 10,000 models): with the models and the
groups, a tenth of a second a rescan spent being told what it was told last
time.  Only an entity written since can have joined or left a list, and the
graph says which of those it lists now (:attr:`~recall_dagster.graph.port.Changes.listed`).
"""

from __future__ import annotations

from typing import Mapping

from recall_dagster.graph.overlay import Overlay
from recall_dagster.graph.port import Changes, MetadataGraph

Listings = Mapping[str, tuple[str, ...]]  # entity type -> its URNs as list_urns gives them


class KnownListings(Overlay):
    """A :class:`MetadataGraph` that lists from ``kept`` (the lists read at a token) once it has been asked
    what changed since that very token, and keeps every list it gave (:meth:`listings`)."""

    def __init__(self, graph: MetadataGraph, kept: tuple[str, Listings] | None = None) -> None:
        super().__init__(graph)
        self._kept = kept
        self._since: Changes | None = None  # what changed since the kept token, once asked
        self._token: str | None = None  # the token of the last answer about changes
        self._lists: dict[str, tuple[str, ...]] = {}

    def changes_since(self, token: str | None) -> Changes:
        changes = self._graph.changes_since(token)
        self._token = changes.token
        if self._kept is not None and token == self._kept[0] and changes.urns is not None:
            self._since = changes
        return changes

    def list_urns(self, entity_type: str) -> list[str]:
        if entity_type not in self._lists:
            kept = self._kept[1].get(entity_type) if self._kept is not None and self._since is not None else None
            self._lists[entity_type] = tuple(self._graph.list_urns(entity_type)) if kept is None else self._now(
                entity_type, kept)
        return list(self._lists[entity_type])

    def _now(self, entity_type: str, kept: tuple[str, ...]) -> tuple[str, ...]:
        assert self._since is not None and self._since.urns is not None
        prefix = f"urn:li:{entity_type}:"
        changed = {u for u in self._since.urns if u.startswith(prefix)}
        if not changed:
            return kept
        return tuple(sorted({u for u in kept if u not in changed} | (changed & self._since.listed)))

    @property
    def kept(self) -> tuple[str, Listings] | None:
        """The lists it was given and the token they stood at."""
        return self._kept

    def listings(self) -> tuple[str, Listings] | None:
        """The lists it gave, and those it kept brought up to date, with the token they stand at; None before
        it was asked what changed."""
        if self._token is None:
            return None
        for entity_type in self._kept[1] if self._kept is not None and self._since is not None else ():
            self.list_urns(entity_type)
        return self._token, dict(self._lists)
