"""The last scan's closures and verdicts on disk, so the next scan reads and judges again only what changed.

All are caches: a missing, damaged or outdated file costs one full rescan (or
one full detection), never an error.  They are written by this very code and
read only by it (pickles stamped by :mod:`recall_dagster.pickles`): the
closures, and apart from them the links a rescan follows a change by, with the
source of the ``estate`` modules, which decide what a closure holds; the
verdicts of either pass with that of ``estate`` and ``detect``, which decide
what is found.
"""

from __future__ import annotations

import functools
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from recall_dagster import detect, estate
from recall_dagster.estate.incremental import Links, Snapshot
from recall_dagster.files import write_atomically
from recall_dagster.pickles import fingerprint, stamped, unstamped
from recall_dagster.verdicts import KeptSpread, Verdicts

_CLOSURES = fingerprint(estate)
_VERDICTS = fingerprint(estate, detect)


@dataclass(frozen=True)
class _Part:
    """One file's share of a snapshot, with the key and token that bind it to the others."""

    key: str
    token: str
    value: object


class SnapshotStore:
    """One snapshot and the verdicts of both passes on it per graph, settings and selection under
    ``<state>/closures``, each replaced atomically."""

    def __init__(self, state_dir: str | os.PathLike[str]) -> None:
        self.folder = Path(state_dir) / "closures"

    def _path(self, key: str, kind: str) -> Path:
        return self.folder / f"{hashlib.sha256(key.encode()).hexdigest()[:20]}{kind}.pickle"

    def load(self, key: str) -> Snapshot | None:
        """The snapshot kept for ``key``; None when there is none this code can trust.  Its links are read
        only when asked for (a rescan following a change), and only if they were kept with the same closures."""
        kept = _read(self._path(key, ""), _CLOSURES)
        if not (isinstance(kept, _Part) and kept.key == key and isinstance(kept.value, dict)):
            return None
        return Snapshot(key, kept.token, kept.value, functools.partial(self._links, key, kept.token))

    def _links(self, key: str, token: str) -> Links | None:
        kept = _read(self._path(key, ".links"), _CLOSURES)
        return kept.value if isinstance(kept, _Part) and (kept.key, kept.token) == (key, token) \
            and isinstance(kept.value, Links) else None

    def save(self, snapshot: Snapshot) -> None:
        links = snapshot.links()
        if links is not None:
            write_atomically(self._path(snapshot.key, ".links"), stamped(_Part(snapshot.key, snapshot.token, links),
                                                                        _CLOSURES), "closure snapshot links")
        write_atomically(self._path(snapshot.key, ""),
                         stamped(_Part(snapshot.key, snapshot.token, dict(snapshot.closures)), _CLOSURES),
                         "closure snapshot")

    def load_verdicts(self, key: str) -> Verdicts | None:
        """The first pass's verdicts kept for ``key``; None when there are none this code can trust."""
        verdicts = _read(self._path(key, ".verdicts"), _VERDICTS)
        return verdicts if isinstance(verdicts, Verdicts) and verdicts.key == key else None

    def save_verdicts(self, verdicts: Verdicts) -> None:
        write_atomically(self._path(verdicts.key, ".verdicts"), stamped(verdicts, _VERDICTS), "scan verdicts")

    def load_spread(self, key: str) -> KeptSpread | None:
        """The second pass kept for ``key``; None when there is none this code can trust."""
        spread = _read(self._path(key, ".spread"), _VERDICTS)
        return spread if isinstance(spread, KeptSpread) and spread.key == key else None

    def save_spread(self, spread: KeptSpread) -> None:
        write_atomically(self._path(spread.key, ".spread"), stamped(spread, _VERDICTS), "blast radius verdicts")


def _read(path: Path, stamp: str) -> object | None:
    try:
        blob = path.read_bytes()
    except OSError:
        return None
    return unstamped(blob, stamp)
