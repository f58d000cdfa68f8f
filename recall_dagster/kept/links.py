"""Who read what: the links a rescan follows a change by, looked up by key.

A rescan needs the readers of the few entities a change reaches, the
far-side links of the few datasets it reads again, and the groups of the
versions it reads; at 10,000 models, loading all of them was a sixth of a
rescan.  So the last scan's links are asked by key (:class:`KeptLinks`: in
memory, or in the snapshot store's database), and a rescan's links are those
with what it changed laid over them (:class:`ChangedLinks`), which the store
writes as that change alone.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Protocol

from recall_dagster.estate.closure import Closure, ModelClosure
from recall_dagster.kept.incoming import Answers, Key
from recall_dagster.estate.views import Model

Incoming = Mapping[Key, tuple[str, ...]]  # (relationship, target) -> its sources, sorted
Chosen = tuple[tuple[str, ...], frozenset[str]]  # a model's groups, and what decides whether it is scanned


class LinksMoved(Exception):
    """The kept links were rewritten by another scan while this one read them: what it read may not agree."""


class KeptLinks(Answers, Protocol):
    """The links of the last scan, asked by key (the far-side ones as :class:`Answers`)."""

    def models(self) -> frozenset[str]:
        """Every listed model the last scan read, selected or not."""

    def chosen(self, models: Iterable[str]) -> dict[str, Chosen]:
        """Of ``models``, those read: their groups, and what choosing them read."""

    def members(self, groups: Iterable[str]) -> dict[str, tuple[str, ...]]:
        """Of ``groups``, those some model read belongs to: its models."""

    def readers(self, entities: Iterable[str]) -> dict[str, tuple[str, ...]]:
        """Of ``entities``, those some model read: the models whose choosing, or closure, read it."""

    def whole(self) -> Links:
        """All of them, at once."""


@dataclass(frozen=True)
class Links:
    """The links in memory, whole: what a full read makes, and what a test compares."""

    models_read: Mapping[str, Chosen]  # every listed model read, selected or not
    readers_of: Mapping[str, tuple[str, ...]]  # entity -> the listed models whose choosing, or closure, read it
    asked: Incoming = field(default_factory=dict)  # the far-side links resolving asked about

    def models(self) -> frozenset[str]:
        return frozenset(self.models_read)

    def chosen(self, models: Iterable[str]) -> dict[str, Chosen]:
        return _picked(self.models_read, models)

    def members(self, groups: Iterable[str]) -> dict[str, tuple[str, ...]]:
        return _picked(self._members, groups)

    @functools.cached_property
    def _members(self) -> dict[str, tuple[str, ...]]:
        members: dict[str, list[str]] = {}
        for urn, (groups, _) in self.models_read.items():
            for group in groups:
                members.setdefault(group, []).append(urn)
        return {g: tuple(m) for g, m in members.items()}

    def readers(self, entities: Iterable[str]) -> dict[str, tuple[str, ...]]:
        return _picked(self.readers_of, entities)

    def incoming(self, keys: Iterable[Key]) -> dict[Key, tuple[str, ...]]:
        return _picked(self.asked, keys)

    def holding(self, sources: Iterable[str]) -> set[Key]:
        wanted = frozenset(sources)
        return {k for k, held in self.asked.items() if not wanted.isdisjoint(held)} if wanted else set()

    def relationships(self) -> frozenset[str]:
        return frozenset(r for r, _ in self.asked)

    def whole(self) -> Links:
        return self


@dataclass(frozen=True)
class LinksChange:
    """What a rescan changed in the links: whole entries put in their place (None, or no readers: gone)."""

    models: Mapping[str, Chosen | None]
    readers: Mapping[str, tuple[str, ...]]
    incoming: Incoming

    def then(self, later: LinksChange) -> LinksChange:
        """This change and ``later`` as one."""
        return LinksChange({**self.models, **later.models}, {**self.readers, **later.readers},
                           {**self.incoming, **later.incoming})


class ChangedLinks:
    """``base`` with ``change`` laid over it: a rescan's links, which a store keeps by writing the change."""

    def __init__(self, base: KeptLinks, change: LinksChange) -> None:
        if isinstance(base, ChangedLinks):  # one change on the links kept, however many rescans ran in memory
            change = base.change.then(change)
            base = base.base
        self.base: KeptLinks = base
        self.change: LinksChange = change

    def models(self) -> frozenset[str]:
        put = {u for u, c in self.change.models.items() if c is not None}
        return frozenset(u for u in self.base.models() if u not in self.change.models).union(put)

    def chosen(self, models: Iterable[str]) -> dict[str, Chosen]:
        wanted = set(models)
        changed = {u: self.change.models[u] for u in wanted if u in self.change.models}
        found = self.base.chosen(wanted - changed.keys())
        found.update((u, c) for u, c in changed.items() if c is not None)
        return found

    def members(self, groups: Iterable[str]) -> dict[str, tuple[str, ...]]:
        wanted = set(groups)
        members = {g: [u for u in urns if u not in self.change.models]
                   for g, urns in self.base.members(wanted).items()}
        for urn, chosen in self.change.models.items():
            for group in chosen[0] if chosen is not None else ():
                if group in wanted:
                    members.setdefault(group, []).append(urn)
        return {g: tuple(urns) for g, urns in members.items() if urns}

    def readers(self, entities: Iterable[str]) -> dict[str, tuple[str, ...]]:
        wanted = set(entities)
        found = self.base.readers(wanted - self.change.readers.keys())
        found.update((e, r) for e in wanted if (r := self.change.readers.get(e)))
        return found

    def incoming(self, keys: Iterable[Key]) -> dict[Key, tuple[str, ...]]:
        wanted = set(keys)
        found = self.base.incoming(wanted - self.change.incoming.keys())
        found.update((k, self.change.incoming[k]) for k in wanted if k in self.change.incoming)
        return found

    def holding(self, sources: Iterable[str]) -> set[Key]:
        wanted = frozenset(sources)
        held = {k for k in self.base.holding(wanted) if k not in self.change.incoming}
        held.update(k for k, now in self.change.incoming.items() if not wanted.isdisjoint(now))
        return held

    def relationships(self) -> frozenset[str]:
        return self.base.relationships().union(r for r, _ in self.change.incoming)

    def whole(self) -> Links:
        base = self.base.whole()
        models = {**base.models_read, **self.change.models}
        readers = {**base.readers_of, **self.change.readers}
        return Links({u: c for u, c in models.items() if c is not None}, {e: r for e, r in readers.items() if r},
                     {**base.asked, **self.change.incoming})


def links_of(closures: Mapping[str, ModelClosure], models: Mapping[str, Model], asked: Incoming) -> Links:
    """The links of a full read: ``models`` (every listed model read), the ``closures`` of those selected, and
    the far-side links resolving ``asked`` about."""
    chosen = {u: (m.groups, m.chosen_by) for u, m in models.items()}
    readers: dict[str, list[str]] = {}  # gathered in lists: an owner of every model is read by ten thousand
    for urn in models:
        for entity in closures[urn].read if urn in closures else chosen[urn][1]:
            readers.setdefault(entity, []).append(urn)
    return Links(chosen, {e: tuple(m) for e, m in readers.items()}, dict(asked))


def links_changed(before: KeptLinks, read_before: Mapping[str, Closure], kept: set[str],
                  closures: Mapping[str, ModelClosure], models: Mapping[str, Model], asked: Incoming) -> ChangedLinks:
    """``before`` (the last scan's links, with ``read_before``, its closures) brought up to date by a rescan that
    kept the models in ``kept``, read ``models`` again (``closures``: those selected) and brought the far-side
    links in ``asked`` up to date: a model read again, or no longer listed, leaves the readers of what it read
    then, and joins those of what it reads now.  Only the readers whose models differ are put in the change:
    an owner ten thousand models read is not written again when one of them is read again."""
    again = before.models() - kept  # read again now, or no longer listed
    gone = again - models.keys()
    chosen_now = {u: (m.groups, m.chosen_by) for u, m in models.items()}
    chosen_then = before.chosen(u for u in again if u not in read_before)
    then = {u: read_before[u].whole().read if u in read_before else chosen_then[u][1] for u in again}
    now = {u: closures[u].read if u in closures else chosen_now[u][1] for u in models}
    left: dict[str, set[str]] = {}
    joined: dict[str, list[str]] = {}
    for urn in again | models.keys():
        was, became = then.get(urn, frozenset()), now.get(urn, frozenset())
        for entity in was - became:
            left.setdefault(entity, set()).add(urn)
        for entity in became - was:
            joined.setdefault(entity, []).append(urn)
    touched = left.keys() | joined.keys()
    current = before.readers(touched)
    readers = {e: (*(m for m in current.get(e, ()) if m not in left.get(e, ())), *joined.get(e, ()))
               for e in touched}
    change_models: dict[str, Chosen | None] = {u: None for u in gone}
    change_models.update(chosen_now)
    return ChangedLinks(before, LinksChange(change_models, readers, dict(asked)))


def _picked(values: Mapping, keys: Iterable) -> dict:
    return {k: values[k] for k in keys if k in values}
