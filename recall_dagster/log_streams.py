"""Library log lines follow the process's stderr wherever Recall sends it: into a log file, through redaction.

A library that calls ``logging.basicConfig()`` when it is imported (dbt's
telemetry library does) leaves a handler on the root logger holding the stderr
of that moment. Replacing ``sys.stderr`` later moves Recall's own printing but
not that handler, so every library logger's lines kept reaching the terminal as
they were: around ``make demo``'s quiet steps, and past the CLI's masking of
secrets.
"""

from __future__ import annotations

import logging
import sys
from contextlib import contextmanager
from typing import Iterator, TextIO


@contextmanager
def root_handlers_onto(stream: TextIO, were: TextIO) -> Iterator[bool]:
    """Every plain root :class:`logging.StreamHandler` writing to ``were`` (or to the process's own stderr,
    which ``were`` may wrap) writes to ``stream`` while inside; yields whether there was one."""
    moved = {h: h.stream for h in logging.getLogger().handlers
             if type(h) is logging.StreamHandler and (h.stream is were or h.stream is sys.__stderr__)}
    for handler in moved:
        handler.setStream(stream)
    try:
        yield bool(moved)
    finally:
        for handler, held in moved.items():
            handler.setStream(held)
