"""Text from outside as Recall shows it: every character drawn, none that a terminal or a reader acts on.

Names, descriptions and test messages in the graph are typed by whoever wrote
them, and Recall repeats them in a terminal, in Slack and GitHub, in DataHub's
incident and document titles and in Dagster's Markdown. In a terminal an ESC
starts a sequence the terminal obeys (``ESC[2J`` clears the screen,
``ESC]8;;URL`` turns the next words into a link to somewhere else, ``ESC]0;``
retitles the window); anywhere, a right-to-left override (U+202E) makes
``gpj.exe`` read as ``exe.jpg``, and a zero-width space makes two different
names look alike. :func:`shown` is the one rule for all of them: Markdown adds
its own escapes to it (:func:`recall_dagster.markdown.md_text`), Rich its
markup's (:func:`recall_dagster.terminal.esc`), Slack and GitHub theirs
(:mod:`recall_dagster.writeback.notify`).

Such a character is written as its escape (``\\x1b``, ``\\u202e``), not dropped:
the operator sees that the name holds something it does not show, which is
what to tell whoever wrote it, and two names that differ only there stay two
names on screen. Whitespace of any kind (a description's line breaks and tabs,
a no-break space) is a plain space: it separates words, and spelled out it would
bury the text. The escapes are for a person to read, not to parse back (a name
holding the four characters ``\\x1b`` reads the same); ``--json`` keeps the exact
text, which JSON itself escapes.
"""

from __future__ import annotations

from recall_dagster.drawn import drawn
from recall_dagster.secrets import redact


def shown(value: object, *, lines: bool = False) -> str:
    """``value`` as text to show: secrets masked (:func:`redact`), then :func:`~recall_dagster.drawn.drawn`
    (whitespace a space, every character not drawn as itself written as its escape). With ``lines``, line
    breaks stay and each line is shown so: a message or a patch keeps its lines."""
    text = redact(str(value))
    if lines:
        return "\n".join(drawn(line) for line in text.split("\n"))
    return drawn(text)
