"""Instants as Recall prints them: ISO-8601 in UTC, to the second."""

from __future__ import annotations

from datetime import datetime, timezone


def iso_instant(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat(timespec="seconds")
