"""The CLI reference, written from the commands themselves: every command's and subcommand's ``--help``.

``python -m recall_dagster.cli.reference > docs/cli.md`` rewrites it; a test
fails when the page and the commands part, so an option cannot be added,
renamed or described anew without the reference saying so.
"""

from __future__ import annotations

from typing import Iterator

import click

from recall_dagster.cli import cli

WIDTH = 100  # the help as a terminal this wide shows it

HEADER = """# CLI reference

Generated from the commands by `python -m recall_dagster.cli.reference > docs/cli.md`; do not edit it by hand.

Exit codes, for every command: 0 healthy / GO, 1 findings at the fail tier / NO-GO, 2 bad usage or
configuration, 3 a required service is unreachable, 4 UNVERIFIED (evidence a required check needs is
missing). Every command that answers takes `--json`; the contracts are in the [JSON contracts](contracts.md).
"""


def _helps(command: click.Command, path: list[str], parent: click.Context | None) -> Iterator[tuple[str, str]]:
    ctx = click.Context(command, info_name=path[-1], parent=parent, terminal_width=WIDTH, max_content_width=WIDTH)
    yield " ".join(path), command.get_help(ctx)
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from _helps(sub, [*path, name], ctx)


def reference() -> str:
    """Every command's help, in the order ``recall --help`` lists them."""
    parts = [HEADER]
    for name, text in _helps(cli, ["recall"], None):
        parts.append(f"## `{name}`\n\n```text\n{text}\n```\n")
    return "\n".join(parts)


if __name__ == "__main__":
    print(reference(), end="")
