"""Recall's own memory between write-backs, under ``state_dir/writeback/``, per graph.

Four small JSON files, each keyed by the graph's location so a Lite file and a
GMS server never share entries:

* ``pending.json``: run events that did not land.  State (tags, properties,
  incidents, documents, assertion definitions) is planned whole on every scan
  and needs no carrying over; events are history and would otherwise be lost.
* ``capabilities.json``: what was learned about a graph once rather than on
  every scan: that the server refuses incidents on mlModels, and that every
  entity Recall wrote there carries the managed tag (so a write-back finds
  them by the tag and lists no entity type).
* ``notifications.json``: which incident states were announced on which
  channel, so nothing is announced twice.
* ``events.json``: the run events sent for the latest scan instant (landed or
  kept pending), so a scan written again (a Dagster re-execution from a failed
  write-back, a rerun with the same ``--as-of``) records each evaluation once.

Each file is replaced under its own lock, this graph's entry laid over the
latest whole, so an incident sync remembering a capability never undoes a
write-back's pending writes.  One write-back at a time holds them all from
planning to its last save (``Settings.writing("writeback", ...)``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

from recall_dagster.files import read_json_object, update_json
from recall_dagster.writeback.writes import Write


class WritebackStore:
    def __init__(self, state_dir: str | os.PathLike[str], location: str) -> None:
        self.root = Path(state_dir) / "writeback"
        self.location = location

    def _read(self, name: str) -> dict[str, Any]:
        return read_json_object(self.root / name, "write-back state")

    def _section(self, name: str) -> Any:
        return self._read(name).get(self.location)

    def _save(self, name: str, value: Any) -> None:
        """Replace this graph's entry, leaving other graphs' entries alone."""
        self._update(name, lambda _: value)

    def _update(self, name: str, change: Callable[[Any], Any]) -> None:
        """This graph's entry replaced by ``change`` of the latest one, under the file's lock; an empty one goes."""

        def section(data: dict[str, Any]) -> dict[str, Any]:
            value = change(data.get(self.location))
            others = {k: v for k, v in data.items() if k != self.location}
            return {**others, self.location: value} if value else others

        update_json(self.root / name, section, "write-back state")

    def pending(self) -> list[Write]:
        return [Write.from_json(item) for item in self._section("pending.json") or []]

    def save_pending(self, writes: list[Write]) -> None:
        self._save("pending.json", [w.to_json() for w in writes if w.is_event])

    def capability(self, name: str) -> bool | None:
        return (self._section("capabilities.json") or {}).get(name)

    def save_capabilities(self, found: dict[str, bool]) -> None:
        self._update("capabilities.json", lambda known: {**(known or {}), **found})

    def notified(self) -> dict[str, dict[str, Any]]:
        return self._section("notifications.json") or {}

    def save_notified(self, notified: dict[str, dict[str, Any]]) -> None:
        self._save("notifications.json", notified)

    def events_sent(self, scanned_at_ms: int) -> set[str]:
        """The evaluations (:attr:`Write.evaluation`) already sent for the scan at ``scanned_at_ms``."""
        entry = self._section("events.json") or {}
        return set(entry.get("sent", [])) if entry.get("scanned_at_ms") == scanned_at_ms else set()

    def save_events_sent(self, scanned_at_ms: int, sent: set[str]) -> None:
        self._save("events.json", {"scanned_at_ms": scanned_at_ms, "sent": sorted(sent)})
