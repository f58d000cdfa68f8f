"""Work a detector does on one dataset, done once per pass however many closures hold that dataset.

Closures resolved together share their dataset views (one object per dataset),
and at ten thousand models a dataset sits in a dozen closures on average: a
detector that judges each dataset on its own (its freshness at the instant, its
schema against the baseline, its PII marks) repeats that work per closure
unless the result is kept.  Keys are the identity of the objects the work
reads, never their value, so a closure holding a different view of the same URN
(reused from a snapshot beside one read again) is judged on its own view.

The lookup is on the path of every (closure, dataset) pair of a scan, 150,000
of them at ten thousand models: a kind of judgement is looked up once per
closure (:meth:`Memo.judgements`), and the datasets of a closure are judged in
one call (:meth:`Judgements.over`), each by one dictionary read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Generic, Hashable, Mapping, TypeVar

if TYPE_CHECKING:
    from _typeshed import SupportsDunderLT

T = TypeVar("T")
Ordered = TypeVar("Ordered", bound="SupportsDunderLT[Any]")  # judgements :meth:`Judgements.least` compares
Item = TypeVar("Item")
K = TypeVar("K")


class Judgements(Generic[Item, T]):
    """One kind of judgement under one context (the instant, a config section...), per object judged."""

    __slots__ = ("context", "_done")

    def __init__(self, context: tuple[object, ...]) -> None:
        self.context = context  # held, so the identities in the key stay theirs
        self._done: dict[int, tuple[Item, T]] = {}

    def over(self, items: Mapping[K, Item], judge: Callable[[Item], T]) -> list[tuple[K, Item, T]]:
        """``(key, object, judgement)`` for each of ``items`` judged something (a truthy judgement), in their
        order; each object is judged the first time it is asked about, and held with its judgement."""
        done = self._done
        found = []
        for key, judged in items.items():
            hit = done.get(id(judged))
            if hit is None:
                hit = done[id(judged)] = (judged, judge(judged))
            if hit[1]:
                found.append((key, judged, hit[1]))
        return found

    def least(self, items: Mapping[K, Item], judge: Callable[[Item], Ordered | None]) -> Ordered | None:
        """The least of the judgements of ``items`` that are not None (None if none is), each object judged the
        first time it is asked about: a closure's earliest instant its verdict may turn at, one read per
        dataset."""
        done: dict[int, tuple[Item, Any]] = self._done  # this kind's judgements are Ordered or None
        least: Ordered | None = None
        for judged in items.values():
            hit = done.get(id(judged))
            if hit is None:
                hit = done[id(judged)] = (judged, judge(judged))
            value = hit[1]
            if value is not None and (least is None or value < least):
                least = value
        return least


class Memo:
    """A per-pass cache: created with the pass's :class:`~recall_dagster.detect.state.DetectorState`, dropped
    with it."""

    def __init__(self) -> None:
        self._kinds: dict[tuple[Hashable, ...], Judgements] = {}

    def judgements(self, kind: Hashable, *context: object) -> Judgements:
        """The judgements of ``kind`` made under exactly these ``context`` objects."""
        slot = (kind, *map(id, context))
        found = self._kinds.get(slot)
        if found is None:
            found = self._kinds[slot] = Judgements(context)
        return found
