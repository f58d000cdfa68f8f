"""Text from the graph as Markdown shows it, never as Markdown acts on it.

The scan report and its Dagster metadata, the governance evidence and the
documents Recall writes into DataHub are Markdown that people open in a
browser. A name or description in the graph is typed by whoever wrote it: an
``<img onerror=...>``, a ``[click](http://elsewhere)`` or a line starting a new
heading must read as the characters it is, and a URL's password or a token
pasted into it must not be repeated. Every Markdown builder passes graph text
through :func:`md_text`, and no other escaping: it is :func:`shown`, the rule
for all text Recall shows, with Markdown's escapes on top.
"""

from __future__ import annotations

from typing import Iterable

from recall_dagster.drawn import md_escaped
from recall_dagster.shown import shown

def md_text(value: object) -> str:
    """``value`` as one line of inert Markdown text: :func:`shown` (secrets masked, line breaks a space, a
    control or format character such as ESC or a right-to-left override written as its escape), then the
    characters Markdown acts on escaped."""
    return md_escaped(shown(value))


def md_list(items: Iterable[object]) -> str:
    """``items`` as a Markdown bullet list, each one line of :func:`md_text`: no item starts a heading or ends
    the list."""
    return "\n".join(f"- {md_text(item)}" for item in items)
