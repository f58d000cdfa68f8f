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
            self.console.print(f"  [dim]{message}[/]")


@contextmanager
def quiet_libraries(log: Path) -> Iterator[Path]:
    """Everything libraries print to stderr (MLflow's migrations, alembic, warnings, DataHub's source
    notes) goes to ``log`` while inside, so the terminal shows only Progress lines made before entering.

    Handlers libraries create inside bind to the log file, which therefore stays
    open for the rest of the process. Handlers made before, on the terminal, are
    pointed at the log while inside: dbt's telemetry library calls
    ``logging.basicConfig()`` when it is imported, and every library logger's
    lines then reached the terminal through it (dagster-dbt's ``Running dbt
    command`` in the middle of ``make demo``).
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    handle = open(log, "a", buffering=1)  # noqa: SIM115 - handlers made inside keep writing to it
    saved, sys.stderr = sys.stderr, handle
    root = logging.getLogger()
    # the process's own stderr too: sys.stderr may be a wrapper of it by now (the CLI's redaction, DataHub's masking)
    on_terminal = {h: h.stream for h in root.handlers
                   if type(h) is logging.StreamHandler and (h.stream is saved or h.stream is sys.__stderr__)}
    for handler in on_terminal:
        handler.setStream(handle)
    file_handler = logging.StreamHandler(handle)
    if not on_terminal:
        root.addHandler(file_handler)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("default")
            yield log
    finally:
        sys.stderr = saved
        root.removeHandler(file_handler)
        for handler, stream in on_terminal.items():
            handler.setStream(stream)
