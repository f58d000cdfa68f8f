"""Long commands show their steps to a person at a terminal, and nothing to a pipe, a CI log or --json."""

from __future__ import annotations

import io
import logging
import sys
from pathlib import Path

import pytest

from recall_dagster.progress import Progress, quiet_libraries


class _Stream(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def test_progress_shows_on_a_terminal_and_keeps_quiet_when_piped_or_json() -> None:
    for tty, as_json, shown in ((True, False, True), (False, False, False), (True, True, False)):
        stream = _Stream(tty)
        progress = Progress.for_command(as_json, stream)
        with progress.step("read the closures"):
            pass
        assert ("read the closures" in stream.getvalue()) is shown, (tty, as_json)


class _Wrapper(io.StringIO):
    """A stand-in for the CLI's redacting wrapper of the process's stderr."""


@pytest.mark.parametrize("wrapped", [False, True], ids=["stderr", "stderr-wrapped-since"])
def test_library_logging_set_up_before_goes_to_the_log_not_the_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wrapped: bool
) -> None:
    """A library that called ``logging.basicConfig()`` on import (dbt's telemetry does) made a handler on the
    terminal before the quiet block began, and the CLI may have wrapped ``sys.stderr`` since: inside the block,
    library lines go to the log; after it, the handler is the terminal's again."""
    terminal = io.StringIO()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setattr(sys, "__stderr__", terminal)
    root = logging.getLogger()
    early = logging.StreamHandler()  # bound to the terminal, as basicConfig's is
    if wrapped:
        monkeypatch.setattr(sys, "stderr", _Wrapper())
    root.addHandler(early)
    library = logging.getLogger("dagster.builtin.test")
    library.setLevel(logging.INFO)
    try:
        with quiet_libraries(tmp_path / "logs" / "seed.log") as log:
            library.info("Running dbt command: dbt parse")
        library.info("after the block")
    finally:
        root.removeHandler(early)
    assert "Running dbt command" in log.read_text()
    assert "Running dbt command" not in terminal.getvalue()
    assert "after the block" in terminal.getvalue()
