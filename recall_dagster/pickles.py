"""Pickles that only the code which wrote them reads back.

Recall keeps some of its own objects between runs (the last scan's closures, a
shard's part of a scan) as pickles: they are written and read by this package
alone, and a pickle of objects whose classes have changed since would load as
something else.  Each is stamped with a fingerprint of the source of the
modules that define what it holds, and one stamped by other code is refused.
"""

from __future__ import annotations

import hashlib
import pickle
from pathlib import Path
from types import ModuleType
from typing import Any

from recall_dagster.collector import paused


def fingerprint(*packages: ModuleType) -> str:
    """The source of every module of ``packages``: what decides the shape of the objects they define."""
    digest = hashlib.sha256()
    for package in packages:
        for source in sorted(Path(str(package.__file__)).parent.glob("*.py")):
            digest.update(f"{package.__name__}.{source.name}".encode() + source.read_bytes())
    return digest.hexdigest()


def stamped(value: Any, stamp: str) -> bytes:
    return pickle.dumps((stamp, value), protocol=pickle.HIGHEST_PROTOCOL)


def unstamped(blob: bytes, stamp: str) -> Any | None:
    """What ``blob`` holds, or None when it is damaged or was stamped by other code.

    Loaded with the collector paused (:mod:`recall_dagster.collector`): a
    snapshot of 10,000 closures is millions of new objects, none of them
    garbage, and the collections their allocation would set off cost as much
    as the load itself.
    """
    try:
        with paused():
            found, value = pickle.loads(blob)
    except Exception:  # damaged, truncated, or classes that are gone: not ours to read
        return None
    return value if found == stamp else None
