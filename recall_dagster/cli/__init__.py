"""The ``recall`` command: thin wiring over the same functions the Dagster assets call.

Exit codes: 0 healthy / GO, 1 findings at or above the fail level / NO-GO,
2 bad usage or config, 3 a required service is unreachable, 4 UNVERIFIED (evidence a
required check needs is missing).
"""

from __future__ import annotations

import click

from recall_dagster.errors import RecallError
from recall_dagster.secrets import redact


class RecallGroup(click.Group):
    """Turns every RecallError into its message and exit code, never a traceback."""

    def invoke(self, ctx: click.Context):  # type: ignore[override]
        try:
            return super().invoke(ctx)
        except RecallError as err:
            click.secho(f"recall: {redact(str(err))}", fg="red", err=True)
            ctx.exit(err.exit_code)


@click.group(cls=RecallGroup)
def cli() -> None:
    """Tell which production models are about to break, and why."""


def main() -> None:
    cli(standalone_mode=True)


# Subcommands register themselves on `cli`; imported last because they import it.
from recall_dagster.cli import (  # noqa: E402,F401
    ack, dagster_cmd, diagnose, evidence, impact, lifecycle, mcp_cmd, protect, scan, verify,
)
