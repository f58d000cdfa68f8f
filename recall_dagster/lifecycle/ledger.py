"""The local incident ledger: ``state_dir/lifecycle/incidents.json``, one section per graph.

It is what makes raise / update / resolve idempotent: the sensor, the CLI and
a re-run after a crash all see the same open incidents.  Keyed by the graph's
location so a Lite file and a GMS server never share incidents; replaced
atomically so a reader never sees half a ledger, each graph's section under the
file's lock so a sync of one graph never undoes another's.  One sync of a graph
at a time holds it from load to save (``Settings.writing("incidents", ...)``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

from recall_dagster.errors import ConfigError
from recall_dagster.files import read_json_object, update_json
from recall_dagster.lifecycle.incidents import IncidentEntry


class Ledger:
    def __init__(self, state_dir: str | os.PathLike[str], location: str) -> None:
        self.path = Path(state_dir) / "lifecycle" / "incidents.json"
        self.location = location

    def _read(self) -> dict[str, Any]:
        return read_json_object(self.path, "incident ledger")

    def load(self) -> dict[str, IncidentEntry]:
        section = self._read().get(self.location) or {}
        try:
            return {ident: IncidentEntry.from_json(entry) for ident, entry in section.items()}
        except (KeyError, TypeError, ValueError) as err:
            raise ConfigError(f"incident ledger {self.path} has a malformed entry ({err}); delete it") from err

    def save(self, entries: Mapping[str, IncidentEntry]) -> None:
        section = {ident: e.contract().as_json() for ident, e in sorted(entries.items())}
        update_json(self.path, lambda data: {**data, self.location: section}, "incident ledger")
