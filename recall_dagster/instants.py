"""Instants as Recall reads and prints them: epoch millis inside, ISO-8601 in UTC (to the second) outside.

Pure: the clock that says what time it is now is :mod:`recall_dagster.clock`, read at the edges only.
"""

from __future__ import annotations

from datetime import datetime, timezone

from recall_dagster.errors import ConfigError

HOUR_MS = 3_600_000  # one hour in the epoch milliseconds every instant is kept in


def seconds_ms(seconds: float) -> int:
    """Epoch seconds (``time.time()``, a Dagster timestamp) as the epoch millis Recall keeps."""
    return int(seconds * 1000)


def datetime_ms(moment: datetime) -> int:
    return seconds_ms(moment.timestamp())


def ms_datetime(ms: int) -> datetime:
    """Epoch millis as an aware UTC datetime."""
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc)


def in_calendar(ms: int) -> bool:
    """Whether ``ms`` is an instant a datetime can hold (years 1 to 9999): one read from a document or a file
    may be anything."""
    try:
        ms_datetime(ms)
    except (ValueError, OverflowError, OSError):
        return False
    return True


def iso_instant(ms: int) -> str:
    """ISO-8601 to the second; an instant outside the calendar prints as its millis rather than failing."""
    try:
        return ms_datetime(ms).isoformat(timespec="seconds")
    except (ValueError, OverflowError, OSError):
        return f"{ms} ms since the epoch (outside the calendar)"


def parse_instant(value: str, option: str) -> datetime:
    """ISO-8601 (``2025-03-01``, ``2025-03-01T12:00:00Z``) as an aware datetime; naive means UTC. A value that
    is not one is a :class:`ConfigError` naming ``option``."""
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        raise ConfigError(f"{option} {value!r} is not an ISO-8601 date or time (e.g. 2025-03-01T12:00:00Z)") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)
