"""Progress lines for long work, so a person watching a terminal knows what is running."""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Iterator

from rich.console import Console


class Progress:
    """Prints one line per step with its duration; quiet mode prints nothing (for --json)."""

    def __init__(self, console: Console | None = None, quiet: bool = False) -> None:
        self.console = console or Console(stderr=True)
        self.quiet = quiet

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
