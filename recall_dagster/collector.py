"""Python's cycle collector paused for one bulk computation: a scan, or loading the last one.

A scan builds millions of objects that live until it ends (closures, their
views, findings) and almost none of them are cyclic garbage, yet each burst of
allocation sets off collections that walk them all again: a quarter of a
10,000-model scan's time on this machine (63 s paused against 86 s, at the same
peak memory). While paused, reference counting still frees everything that is
not in a cycle. At the end every live object is put straight into the oldest
generation (freeze, unfreeze), so the next young collections do not walk them
once more either.

A process that hosts Recall and manages its own memory, a Dagster run, says so (:func:`host_starts`): while it does,
nothing here touches its collector.
"""

from __future__ import annotations

import functools
import gc
from contextlib import contextmanager
from typing import Callable, Iterator, ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")
_hosts = 0  # hosts in this process using Recall now (Dagster steps): the collector is theirs while one is


def host_starts() -> None:
    """A host (a Dagster step) starts using Recall in this process: while any does, :func:`paused` pauses
    nothing."""
    global _hosts
    _hosts += 1


def host_stops() -> None:
    """A host that started (:func:`host_starts`) is done with Recall; a stop without a start changes nothing."""
    global _hosts
    _hosts = max(0, _hosts - 1)


@contextmanager
def paused() -> Iterator[None]:
    """No cycle collection inside; nested pauses leave the collector to the outermost; under a host, nothing."""
    if _hosts:
        yield
        return
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.unfreeze()
        if collecting:
            gc.enable()


def while_paused(work: Callable[P, T]) -> Callable[P, T]:
    """``work`` run inside :func:`paused`."""

    @functools.wraps(work)
    def run(*args: P.args, **kwargs: P.kwargs) -> T:
        with paused():
            return work(*args, **kwargs)

    return run
