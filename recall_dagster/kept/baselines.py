"""Where schema baselines survive between scans: the history the schema drift detector compares against.

A baseline is a dataset's columns and types as first seen (or last accepted);
the scan reads them, the detectors compare, and the scan records what it saw
for the first time. Kept as an object the scan is handed, so a scan is
reproducible in tests and the detectors never touch a file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Protocol

from recall_dagster.errors import ConfigError
from recall_dagster.files import read_json_object, update_json

Baselines = dict[str, dict[str, str]]  # dataset URN -> {simple field path: type}


class StateStore(Protocol):
    """Where schema baselines survive between scans."""

    def load_baselines(self) -> Baselines: ...

    def save_baselines(self, baselines: Baselines) -> None:
        """Lay these datasets' baselines over the stored ones; the others stay as they are (shards of one
        scan record theirs side by side)."""


class JsonStateStore:
    """Baselines in one JSON file under ``settings.state_dir``, replaced atomically under a lock, so the
    shards of a scan, recording at once, all keep theirs."""

    def __init__(self, state_dir: str | os.PathLike[str]) -> None:
        self.path = Path(state_dir) / "schema_baselines.json"

    def load_baselines(self) -> Baselines:
        return self._checked(read_json_object(self.path, "schema baselines"))

    def _checked(self, data: dict) -> Baselines:
        """``data`` as baselines; anything else is refused, saved over or not."""
        if not all(isinstance(cols, dict) for cols in data.values()):
            raise ConfigError(
                f"schema baselines {self.path} do not map datasets to column types; delete the file to start afresh"
            )
        if all(isinstance(t, str) for cols in data.values() for t in cols.values()):
            return data  # as this store writes them: JSON keys are text already
        return {str(u): {str(c): str(t) for c, t in cols.items()} for u, cols in data.items()}

    def save_baselines(self, baselines: Baselines) -> None:
        update_json(self.path, lambda stored: {**self._checked(stored), **baselines}, "schema baselines")


class MemoryStateStore:
    """Baselines kept in memory: tests, and runs that must not remember."""

    def __init__(self, baselines: Baselines | None = None) -> None:
        self.baselines: Baselines = {u: dict(c) for u, c in (baselines or {}).items()}

    def load_baselines(self) -> Baselines:
        return {u: dict(c) for u, c in self.baselines.items()}

    def save_baselines(self, baselines: Baselines) -> None:
        self.baselines.update({u: dict(c) for u, c in baselines.items()})
