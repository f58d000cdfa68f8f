"""Progress lines for long work, so a person watching a terminal knows what is running."""

from __future__ import annotations

import logging
import sys
import time
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, TextIO

from rich.console import Console

from recall_dagster.log_streams import root_handlers_onto
from recall_dagster.terminal import esc


class Progress:
    """Prints one line per step with its duration; quiet mode prints nothing (for --json)."""

    def __init__(self, console: Console | None = None, quiet: bool = False) -> None:
        # bound to stderr as it is now, so libraries' output sent elsewhere later (quiet_libraries) is not ours
        self.console = console or Console(file=sys.stderr)
        self.quiet = quiet

    @classmethod
    def for_command(cls, as_json: bool, stream: TextIO | None = None) -> "Progress":
        """Steps on a person's terminal; nothing with --json or when stderr is piped to a file or a CI log."""
        stream = stream or sys.stderr
        return cls(Console(file=stream), quiet=as_json or not stream.isatty())

    @contextmanager
    def step(self, label: str) -> Iterator[None]:
        started = time.monotonic()
        if not self.quiet:
            self.console.print(f"[bold cyan]▸[/] {label} …")
        yield
        if not self.quiet:
            self.console.print(f"  [green]✓[/] {label} [dim]({time.monotonic() - started:.1f}s)[/]")

    def note(self, message: str) -> None:
        if not self.quiet:
            self.console.print(f"  [dim]{esc(message)}[/]")


@contextmanager
def quiet_libraries(log: Path) -> Iterator[Path]:
    """Everything libraries print to stderr (MLflow's migrations, alembic, warnings, DataHub's source
    notes) goes to ``log`` while inside, so the terminal shows only Progress lines made before entering.

    Handlers libraries create inside bind to the log file, which therefore stays
    open for the rest of the process; those made before on the terminal write to
    it while inside (:mod:`recall_dagster.log_streams`: dagster-dbt's ``Running
    dbt command`` came up in the middle of ``make demo`` that way).
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    handle = open(log, "a", buffering=1)  # handlers made inside keep writing to it
    saved, sys.stderr = sys.stderr, handle
    root = logging.getLogger()
    file_handler = logging.StreamHandler(handle)
    try:
        with root_handlers_onto(handle, saved) as moved, warnings.catch_warnings():
            if not moved:
                root.addHandler(file_handler)
            warnings.simplefilter("default")
            yield log
    finally:
        sys.stderr = saved
        root.removeHandler(file_handler)
