"""Blobs a snapshot keeps beside its index files and reads one at a time: closure bodies and their datasets.

A rescan of 10,000 models that one change reached reads none of the kept
bodies (:mod:`recall_dagster.kept.closures`), yet loading them with the heads,
even undecoded, was most of its load: 75 MB copied and paged in.  So they live
in pack files the heads point into (name, offset, length) and are read by
offset when a body is first decoded.  A pack is written whole, once, under a
name of its own and never changed: each save puts the blobs it adds in a new
pack, a reader opens every pack its heads name when it loads them (an open
pack stays readable after a later save removes it), and a save removes the
packs no head names any more.  Each blob is signed on its own
(:class:`~recall_dagster.pickles.Signer`) and checked when it is decoded.
"""

from __future__ import annotations

import os
import pickle
import uuid
import weakref
from pathlib import Path
from typing import BinaryIO, Iterable, Mapping, TypeVar

from recall_dagster.errors import ConfigError
from recall_dagster.kept.closures import Ref
from recall_dagster.files import write_atomically
from recall_dagster.pickles import Signer

K = TypeVar("K")


class Reader:
    """The packs one load named, open until the reader is gone."""

    def __init__(self, fds: Mapping[str, int]) -> None:
        self._fds = dict(fds)
        weakref.finalize(self, _close, list(self._fds.values()))

    def __call__(self, ref: Ref) -> bytes:
        name, offset, length = ref
        blob = os.pread(self._fds[name], length, offset)
        if len(blob) != length:
            raise ConfigError(f"the closure snapshot's pack {name} is cut short: delete RECALL_HOME/state/closures "
                              "and scan again")
        return blob


def _close(fds: list[int]) -> None:
    for fd in fds:
        os.close(fd)


class Packs:
    """The packs of one snapshot key in ``folder``, named ``<prefix>.<id>.pack``."""

    def __init__(self, folder: Path, prefix: str, signer: Signer) -> None:
        self.folder = folder
        self.prefix = prefix
        self.signer = signer

    def open(self, names: Iterable[str]) -> Reader | None:
        """The packs ``names`` (as refs name them), open for reading; None when one is gone."""
        fds: dict[str, int] = {}
        try:
            for name in set(names):
                fds[name] = os.open(self.folder / name, os.O_RDONLY)
        except OSError:
            _close(list(fds.values()))
            return None
        return Reader(fds)

    def write(self, objects: Mapping[K, object], blobs: Mapping[K, bytes] | None = None) -> dict[K, Ref]:
        """``objects``, each pickled and signed on its own, and ``blobs`` (signed pickles already) in one new
        pack; where each one is."""
        if not objects and not blobs:
            return {}
        name = f"{self.prefix}.{uuid.uuid4().hex[:16]}.pack"
        refs: dict[K, Ref] = {}

        def write(out: BinaryIO) -> None:
            start = 0
            for key, value in objects.items():
                blob = self.signer.sign(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
                refs[key] = (name, start, len(blob))
                start += out.write(blob)
            for key, blob in (blobs or {}).items():
                refs[key] = (name, start, len(blob))
                start += out.write(blob)

        write_atomically(self.folder / name, write, "closure snapshot pack")
        return refs

    def sweep(self, named: Iterable[str]) -> None:
        """Remove this key's packs none of ``named`` is (a reader that opened one still reads it)."""
        keep = set(named)
        for pack in self.folder.glob(f"{self.prefix}.*.pack"):
            if pack.name not in keep:
                pack.unlink(missing_ok=True)
