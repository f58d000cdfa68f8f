"""Every character drawn as itself, and Markdown that only shows: the pure half of :mod:`recall_dagster.shown`.

Masking secrets needs the environment; writing out what a terminal or a reader
would act on does not. This half is what the pure core may use when it writes
Markdown of its own (a postmortem), and what :func:`recall_dagster.shown.shown`
and :func:`recall_dagster.markdown.md_text` apply after masking.
"""

from __future__ import annotations

# What makes Markdown (CommonMark with GitHub's tables, and the HTML it passes through) act: a link or image
# needs brackets, HTML and autolinks need angle brackets, code needs a backtick, a table cell ends at a pipe.
_ESCAPES = str.maketrans({"\\": "\\\\", "`": "\\`", "[": "\\[", "]": "\\]", "|": "\\|",
                          "&": "&amp;", "<": "&lt;", ">": "&gt;"})


def drawn(text: str) -> str:
    """``text`` on one line: whitespace of any kind a space, every other character that is not drawn as itself
    (control, format, surrogate, private-use, unassigned) written as its escape (``\\x1b``, ``\\u202e``)."""
    if text.isprintable():  # nearly every name: one pass in C
        return text
    return "".join(c if c.isprintable() else " " if c.isspace() else c.encode("unicode_escape").decode("ascii")
                   for c in text)


def md_escaped(text: str) -> str:
    """``text`` as one line of inert Markdown: :func:`drawn`, then the characters Markdown acts on escaped."""
    return drawn(text).translate(_ESCAPES)
