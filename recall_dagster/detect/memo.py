"""Work a detector does on one dataset, done once per pass however many closures hold that dataset.

Closures resolved together share their dataset views (one object per dataset),
and at ten thousand models a dataset sits in a dozen closures on average: a
detector that judges each dataset on its own (its freshness at the instant, its
schema against the baseline, its PII marks) repeats that work per closure
unless the result is kept.  Keys are the identity of the objects the work
reads, never their value, so a closure holding a different view of the same URN
(reused from a snapshot beside one read again) is judged on its own view.
"""

from __future__ import annotations

from typing import Callable, Hashable, TypeVar

T = TypeVar("T")


class Memo:
    """A per-pass cache: created with the pass's :class:`~recall_dagster.detect.state.DetectorState`, dropped
    with it."""

    def __init__(self) -> None:
        self._done: dict[tuple[Hashable, ...], tuple[tuple[object, ...], object]] = {}

    def once(self, key: Hashable, of: tuple[object, ...], compute: Callable[[], T]) -> T:
        """``compute()``, the first time ``key`` is asked of exactly these objects ``of``.

        The objects are held with the result, so their identities stay theirs
        for as long as the result does.
        """
        slot = (key, *map(id, of))
        if slot in self._done:
            return self._done[slot][1]  # type: ignore[return-value]
        value = compute()
        self._done[slot] = (of, value)
        return value
