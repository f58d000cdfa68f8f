"""``narration.rewrite_command``: the paragraphs Recall writes, handed to a team's own command to reword.

Kept apart from the templates (:mod:`recall_dagster.narrate`, pure) because it
runs a process; the configuration loader checks its section for every command.
"""

from __future__ import annotations

import shlex
import subprocess
from dataclasses import dataclass


@dataclass(frozen=True)
class Rewrite:
    """``narration.rewrite_command``: a command given a paragraph on stdin whose stdout a person reads instead.

    Off when no command is set. A command that fails, times out or prints
    nothing leaves the template, so a rewrite can make text friendlier but
    never make it missing.
    """

    command: str | None = None
    timeout_seconds: float = 20.0

    def __call__(self, text: str) -> str:
        if not self.command:
            return text
        try:
            done = subprocess.run(shlex.split(self.command), input=text, capture_output=True, text=True,
                                  timeout=self.timeout_seconds, check=False)
        except (OSError, subprocess.TimeoutExpired, ValueError):
            return text
        rewritten = done.stdout.strip()
        return rewritten if done.returncode == 0 and rewritten else text
