"""The last scan's closures and verdicts on disk, so the next scan reads and judges again only what changed.

All are caches: a missing, damaged or outdated file costs one full rescan (or
one full detection), never an error.  They are written by this very code and
read only by it (pickles stamped by :mod:`recall_dagster.pickles`): closures
with the source of the ``estate`` modules, which decide what a closure holds;
verdicts of either pass with that of ``estate`` and ``detect``, which decide
what is found.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from recall_dagster import detect, estate
from recall_dagster.estate.incremental import Snapshot
from recall_dagster.files import write_atomically
from recall_dagster.pickles import fingerprint, stamped, unstamped
from recall_dagster.verdicts import KeptSpread, Verdicts

_CLOSURES = fingerprint(estate)
_VERDICTS = fingerprint(estate, detect)


class SnapshotStore:
    """One snapshot and the verdicts of both passes on it per graph, settings and selection under
    ``<state>/closures``, each replaced atomically."""

    def __init__(self, state_dir: str | os.PathLike[str]) -> None:
        self.folder = Path(state_dir) / "closures"

    def _path(self, key: str, kind: str) -> Path:
        return self.folder / f"{hashlib.sha256(key.encode()).hexdigest()[:20]}{kind}.pickle"

    def load(self, key: str) -> Snapshot | None:
        """The snapshot kept for ``key``; None when there is none this code can trust."""
        snapshot = _read(self._path(key, ""), _CLOSURES)
        return snapshot if isinstance(snapshot, Snapshot) and snapshot.key == key else None

    def save(self, snapshot: Snapshot) -> None:
        write_atomically(self._path(snapshot.key, ""), stamped(snapshot, _CLOSURES), "closure snapshot")

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
