"""``narration.rewrite_command``: the paragraphs Recall writes, handed to a team's own command to reword.

Kept apart from the templates (:mod:`recall_dagster.narrate`, pure) because it
runs a process; the configuration loader checks its section for every command.
"""

from __future__ import annotations

import shlex
import subprocess
from typing import Annotated

from pydantic import Field

from recall_dagster.config.fields import Section


class Rewrite(Section):
    """``narration.rewrite_command``: a command given a paragraph on stdin whose stdout a person reads instead.

    Off when no command is set. A command that fails, times out or prints
    nothing leaves the template, so a rewrite can make text friendlier but
    never make it missing.
    """

    rewrite_command: str | None = Field(
        default=None,
        description="Opt-in: a command given a paragraph on stdin whose stdout is shown instead at the terminal.")
    timeout_seconds: Annotated[float, Field(gt=0, allow_inf_nan=False)] = Field(
        default=20.0, description="The rewrite command's time; then the template is shown.")

    def __call__(self, text: str) -> str:
        if not self.rewrite_command:
            return text
        try:
            done = subprocess.run(shlex.split(self.rewrite_command), input=text, capture_output=True, text=True,
                                  timeout=self.timeout_seconds, check=False)
        except (OSError, subprocess.TimeoutExpired, ValueError):
            return text
        rewritten = done.stdout.strip()
        return rewritten if done.returncode == 0 and rewritten else text
