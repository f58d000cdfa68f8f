"""Tables that read in an 80-column terminal: names fold onto further lines, numbers and short words keep their width.

Rich shrinks every column alike when a table is wider than the terminal, so a
long model name used to cut the headers next to it ("sco…") and the names
themselves ("shop.marts.custom…"). Here only the columns holding names give
way, and they fold rather than cut: the whole name stays on screen (and in
``--json``).

Text from outside enters a line or a cell as markup through :func:`esc`, the
terminal's form of :func:`recall_dagster.shown.shown` (or as a Rich ``Text``
of ``shown``), never raw: Rich escapes its own markup only.
"""

from __future__ import annotations

from typing import Literal

from rich.markup import escape
from rich.table import Table

from recall_dagster.shown import shown

Kind = Literal["name", "number", "word"]  # a name folds; a number is right-aligned; a word (a tier) is kept whole


def narrow_table(*columns: tuple[str, Kind] | tuple[str, Kind, int], title: str | None = None) -> Table:
    """A table of ``columns`` (header, kind[, the widest value it holds]) for a terminal of any width."""
    table = Table(title=title, show_edge=False, header_style="bold")
    for header, kind, *widest in columns:
        if kind == "name":
            table.add_column(header, overflow="fold")
        else:
            table.add_column(header, justify="right" if kind == "number" else "left", no_wrap=True,
                             min_width=max([len(header), *widest]))
    return table


def esc(value: object) -> str:
    """``value`` as Rich markup that prints as the characters it is: :func:`shown` (no escape sequence, bidi
    override or secret reaches the terminal), then Rich's markup escaped (``[bold]`` in a name is text).

    Rich's ``escape`` alone leaves an ESC for the terminal to obey, and doubles one trailing backslash only:
    a name ending in three would escape the tag Recall writes after it. Here the whole trailing run is doubled."""
    text = shown(value)
    body = text.rstrip("\\")
    return escape(body) + "\\" * 2 * (len(text) - len(body))
