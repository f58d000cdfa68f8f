"""Local records written whole or not at all, read back with a message that says what to do.

Evidence, baselines, ledgers and pending writes are what Recall falls back on
when a remote write fails, so a crash mid-write must never leave half a file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from recall_dagster.errors import ConfigError


def write_atomically(path: Path, text: str, what: str) -> None:
    """Replace ``path`` with ``text`` in one rename; ``what`` names the record in the error."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text)
        os.replace(tmp, path)
    except OSError as err:
        raise ConfigError(f"cannot write {what} {path}: {err.strerror}; check RECALL_HOME") from err


def write_json(path: Path, data: Any, what: str) -> None:
    write_atomically(path, json.dumps(data, indent=1, sort_keys=True) + "\n", what)


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
