"""Text from outside as Recall shows it (:func:`shown`): whatever the graph holds, nothing a terminal or a reader
acts on comes out (no escape sequence, no bidirectional override, no invisible character), and what was there
is seen, written out; Markdown and the terminal add their own escapes to this one rule."""

from __future__ import annotations

import io
import os
import re
import unicodedata
from unittest.mock import patch

from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from recall_dagster.markdown import md_text
from recall_dagster.shown import shown
from recall_dagster.terminal import esc

from tests.syntax_trees import PACKAGE, imported_modules, package_trees

# What does harm where text is shown: an OSC 8 hyperlink, a screen clear, an OSC 0 window title, a C1 CSI, DEL,
# a right-to-left override and a left-to-right isolate, zero-width characters, a lone surrogate, line breaks,
# and Rich's own markup.
HOSTILE = ("\x1b]8;;http://evil.example\x1b\\click\x1b]8;;\x1b\\", "\x1b[2J", "\x1b]0;owned\x07", "\x9b31m", "\x7f",
           "\u202e", "\u2066", "\u200b", "\ufeff", "\ud800", "\r", "\n", "\t", "\u2028", "[bold]", "[/]", "\\")
anything = st.text(st.characters(exclude_categories=()))  # every code point, lone surrogates included
hostile = st.lists(st.sampled_from(HOSTILE) | anything, max_size=8).map("".join)


def hidden(text: str) -> list[str]:
    """The characters of ``text`` a screen does not draw as themselves: controls (ESC among them), format
    characters (bidi controls, zero-width ones), surrogates, private-use, unassigned, line and paragraph breaks."""
    return [c for c in text if unicodedata.category(c)[0] == "C" or unicodedata.category(c) in ("Zl", "Zp")]


def test_escape_sequences_and_bidi_overrides_are_written_out_not_obeyed() -> None:
    link = "\x1b]8;;http://evil.example\x1b\\click\x1b]8;;\x1b\\"
    assert shown(f"orders{link}\x1b[2J\u202ecod.exe") == (
        "orders\\x1b]8;;http://evil.example\\x1b\\click\\x1b]8;;\\x1b\\\\x1b[2J\\u202ecod.exe")
    assert shown("a\x9b31m\x7f\u200b\U000e0041\ud800") == "a\\x9b31m\\x7f\\u200b\\U000e0041\\ud800"


def test_whitespace_is_a_space_and_line_breaks_stay_only_where_asked() -> None:
    assert shown("first\nsecond\tthird\r\u2028\xa0end") == "first second third   end"
    assert shown("first\n\x1b[2Jsecond", lines=True) == "first\n\\x1b[2Jsecond"


def test_a_secret_is_masked_before_anything_is_shown() -> None:
    assert shown("from postgresql://svc:hunter2@db/x\x1b[2J") == "from postgresql://[redacted]@db/x\\x1b[2J"


@given(hostile)
def test_nothing_shown_is_drawn_invisibly_or_obeyed_and_showing_again_changes_nothing(text: str) -> None:
    once = shown(text)
    assert hidden(once) == [] and "\x1b" not in once
    assert shown(once) == once
    assert hidden(shown(text, lines=True).replace("\n", "")) == []


@given(st.text(st.characters(exclude_categories=(), exclude_characters=":")))  # no URL whose password is masked
def test_every_character_not_drawn_is_written_out_never_dropped(text: str) -> None:
    with patch.dict(os.environ, {}, clear=True):  # no secret to mask either
        said = shown(text)
    for c in text:
        if not c.isprintable() and not c.isspace():
            assert c.encode("unicode_escape").decode() in said


@given(hostile)
def test_markdown_shows_the_same_text_with_its_own_escapes(text: str) -> None:
    assert hidden(md_text(text)) == []
    assert md_text(text) == md_text(shown(text)), "one rule: Markdown adds escapes, never another filter"


@given(hostile)
def test_a_terminal_receives_no_escape_sequence_but_recall_s_own_styles(text: str) -> None:
    """Printed between Recall's own tags on a colour terminal: what arrives is Rich's styles and drawn text, and
    the data neither opens nor closes a tag."""
    console = Console(file=io.StringIO(), force_terminal=True, color_system="standard", width=100_000)
    console.print(f"[bold]{esc(text)}[/bold] end", highlight=False)
    out = console.file.getvalue()
    assert hidden(re.sub(r"\x1b\[[0-9;]*m", "", out).replace("\n", "")) == []
    assert re.search(r"(\A|\x1b\[0m) end\n\Z", out), "the bold ends where Recall's tag ends it"


def test_every_renderer_puts_outside_text_into_rich_markup_through_the_terminal_s_esc() -> None:
    """``rich.markup.escape`` alone passes an ESC to the terminal: only :mod:`recall_dagster.terminal` imports
    it, for :func:`esc`, which shows the text first."""
    importing = sorted(str(path.relative_to(PACKAGE)) for path, tree in package_trees().items()
                       if "rich.markup" in imported_modules(tree))
    assert importing == ["terminal.py"]
