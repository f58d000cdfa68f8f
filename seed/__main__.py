"""``python -m seed build|break|heal|reset|demo``: the demo estate's lifecycle."""

from seed.cli import estate

estate(prog_name="python -m seed")
