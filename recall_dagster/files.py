"""Local records written whole or not at all, read back with a message that says what to do.

Evidence, baselines, ledgers and pending writes are what Recall falls back on
when a remote write fails, so a crash mid-write must never leave half a file.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterator

from recall_dagster.errors import ConfigError, ServiceUnreachable
from recall_dagster.secrets import redact

RECORD_LOCK_SECONDS = 60.0  # a record's own lock is held while it is read and replaced: well under a second


def write_atomically(path: Path, content: str | bytes | Callable[[BinaryIO], None], what: str) -> None:
    """Replace ``path`` with ``content`` (or what ``content`` writes to the file it is given) in one rename;
    ``what`` names the record in the error.

    The temporary file is this writer's own (``mkstemp`` beside the target), so
    two processes writing one record at once each rename a whole file: the last
    one wins, neither sees the other's half.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        tmp = Path(name)
        try:
            with os.fdopen(handle, "wb") as out:
                if callable(content):
                    content(out)
                else:
                    out.write(content if isinstance(content, bytes) else content.encode())
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
    except OSError as err:
        raise ConfigError(f"cannot write {what} {path}: {err.strerror}; check RECALL_HOME") from err


def safe_stem(name: str) -> str:
    """A file name stem for ``name`` that stays in its folder: a model named ``../../tmp/x`` by whoever wrote
    the graph must not make Recall write outside RECALL_HOME. Secrets are masked first (a name may hold a URL
    with its password, and a file name is printed and listed), path separators and leading dots go; what is
    left is kept readable, and a name with nothing left is ``unnamed``."""
    cleaned = re.sub(r"[^A-Za-z0-9._=+-]+", "_", redact(name)).strip("._") or "unnamed"
    return cleaned[:120]


def write_json(path: Path, data: Any, what: str) -> None:
    write_atomically(path, json.dumps(data, indent=1, sort_keys=True) + "\n", what)


def write_record(folder: Path, stem: str, data: Any, text: str, what: str) -> list[Path]:
    """``<stem>.json`` for programs and ``<stem>.md`` for people, side by side.

    The stem (often a name from the graph) is made safe first (:func:`safe_stem`). Each file is replaced
    atomically, and the pair under the record's own lock, so two writers of one record never leave one's JSON
    beside the other's Markdown.
    """
    with _held_record(folder, stem, what) as paths:
        _write_pair(paths, data, text, what)
    return paths


def rewrite_record(folder: Path, stem: str, data: Any, text: str, what: str) -> tuple[list[Path], dict[str, Any]]:
    """:func:`write_record`, and the JSON object it replaced (``{}``: none), read under the same lock: of two
    writers of one record (a metric gate and a ``recall diagnose`` of one version), exactly one sees the
    other's record as the one it replaced."""
    with _held_record(folder, stem, what) as paths:
        previous = read_json_object(paths[0], what)
        _write_pair(paths, data, text, what)
    return paths, previous


@contextmanager
def _held_record(folder: Path, stem: str, what: str) -> Iterator[list[Path]]:
    safe = safe_stem(stem)
    with locked(folder / f".{safe}.lock", what, RECORD_LOCK_SECONDS):
        yield [folder / f"{safe}.json", folder / f"{safe}.md"]


def _write_pair(paths: list[Path], data: Any, text: str, what: str) -> None:
    """An evidence record is read by people and handed to auditors: its secrets are masked as the CLI masks
    what it prints (a name from the graph may hold a URL with its password)."""
    write_atomically(paths[0], redact(json.dumps(data, indent=1)) + "\n", what)
    write_atomically(paths[1], redact(text), what)


def update_json(path: Path, change: Callable[[dict[str, Any]], dict[str, Any]], what: str) -> None:
    """Replace the JSON object in ``path`` with ``change`` of it, under the file's own lock.

    For records several writers keep a part of (the baselines of each shard's tables, each graph's section of
    a ledger): each reads the latest whole and lays its part over it, so none undoes another's.
    """
    with locked(path.with_name(f".{path.name}.lock"), what, RECORD_LOCK_SECONDS):
        write_json(path, change(read_json_object(path, what)), what)


def read_json_object(path: Path, what: str) -> dict[str, Any]:
    """The JSON object in ``path``, ``{}`` when there is none yet."""
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise ConfigError(f"{what} {path} is unreadable ({err}); delete the file to start afresh") from err
    if not isinstance(data, dict):
        raise ConfigError(f"{what} {path} is not a JSON object; delete the file to start afresh")
    return data


@contextmanager
def locked(path: Path, what: str, wait_seconds: float) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` across processes, waiting up to ``wait_seconds`` for another holder.

    Still held after that, it is a :class:`ServiceUnreachable` (exit 3) saying
    what holds it: two writers of the same records must take turns, and one that
    cannot get its turn stops before it has written anything.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(path, "a")
    except OSError as err:
        raise ConfigError(f"cannot lock {path}: {err.strerror}; check RECALL_HOME") from err
    deadline = time.monotonic() + wait_seconds
    try:
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise ServiceUnreachable(
                        f"{what} is busy: another process has held {path} for {wait_seconds:g} s; "
                        "wait for it to finish and run again"
                    ) from None
                time.sleep(0.1)
        yield
    finally:
        handle.close()  # closing releases the lock
