"""The last scan's closures on disk, so the next scan reads again only what changed.

A snapshot is a cache: a missing, damaged or outdated file costs one full
rescan, never an error.  It is written by this very code and read only by it
(a pickle: the closures of 1,000 models load in 0.13 s here), and a snapshot
written by other code is refused by its fingerprint: the source of the
package's ``estate`` modules, which decide what a closure holds.
"""

from __future__ import annotations

import hashlib
import os
import pickle
from pathlib import Path

from recall_dagster import estate
from recall_dagster.estate.incremental import Snapshot
from recall_dagster.files import write_atomically


def _code_fingerprint() -> str:
    digest = hashlib.sha256()
    for source in sorted(Path(estate.__file__).parent.glob("*.py")):
        digest.update(source.name.encode() + source.read_bytes())
    return digest.hexdigest()


_FINGERPRINT = _code_fingerprint()


class SnapshotStore:
    """One snapshot per graph, settings and selection under ``<state>/closures``, replaced atomically."""

    def __init__(self, state_dir: str | os.PathLike[str]) -> None:
        self.folder = Path(state_dir) / "closures"

    def _path(self, key: str) -> Path:
        return self.folder / f"{hashlib.sha256(key.encode()).hexdigest()[:20]}.pickle"

    def load(self, key: str) -> Snapshot | None:
        """The snapshot kept for ``key``; None when there is none this code can trust."""
        try:
            fingerprint, snapshot = pickle.loads(self._path(key).read_bytes())
        except Exception:  # a cache: whatever is wrong with it, the scan reads the graph instead
            return None
        if fingerprint != _FINGERPRINT or not isinstance(snapshot, Snapshot) or snapshot.key != key:
            return None
        return snapshot

    def save(self, snapshot: Snapshot) -> None:
        blob = pickle.dumps((_FINGERPRINT, snapshot), protocol=pickle.HIGHEST_PROTOCOL)
        write_atomically(self._path(snapshot.key), blob, "closure snapshot")
