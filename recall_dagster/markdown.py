"""Text from the graph as Markdown shows it, never as Markdown acts on it.

The scan report and its Dagster metadata, the governance evidence and the
documents Recall writes into DataHub are Markdown that people open in a
browser. A name or description in the graph is typed by whoever wrote it: an
``<img onerror=...>``, a ``[click](http://elsewhere)`` or a line starting a new
heading must read as the characters it is, and a URL's password or a token
pasted into it must not be repeated. Every Markdown builder passes graph text
through :func:`md_text`, and no other escaping.
"""

from __future__ import annotations

from recall_dagster.secrets import redact

# What makes Markdown (CommonMark with GitHub's tables, and the HTML it passes through) act: a link or image
# needs brackets, HTML and autolinks need angle brackets, code needs a backtick, a table cell ends at a pipe.
_ESCAPES = str.maketrans({"\\": "\\\\", "`": "\\`", "[": "\\[", "]": "\\]", "|": "\\|",
                          "&": "&amp;", "<": "&lt;", ">": "&gt;"})


def md_text(value: object) -> str:
    """``value`` as one line of inert Markdown text: secrets masked (:func:`redact`), line breaks, control
    characters and invisible format characters (a right-to-left override, a zero-width space) shown as a
    space, and the characters Markdown acts on escaped."""
    text = "".join(c if c.isprintable() else " " for c in redact(str(value)))
    return text.translate(_ESCAPES)
