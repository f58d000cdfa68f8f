"""Long commands show their steps to a person at a terminal, and nothing to a pipe, a CI log or --json."""

from __future__ import annotations

import io

from recall_dagster.progress import Progress


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
