"""Graph text in Recall's Markdown reads as the characters it is: no link, image, HTML, code span, table cell
break or new line from the data, and no secret."""

from __future__ import annotations

from recall_dagster.markdown import md_text


def test_a_name_that_is_markdown_is_shown_as_text() -> None:
    shown = md_text("orders[click](http://evil.example) <img src=x onerror=alert(1)> `x` a|b \\")
    assert shown == ("orders\\[click\\](http://evil.example) &lt;img src=x onerror=alert(1)&gt; \\`x\\` a\\|b \\\\")


def test_a_description_stays_on_its_line_and_shows_no_control_characters() -> None:
    assert md_text("first\n# heading\r\x1b[31mred\u202eevil\u200b") == "first # heading  \\[31mred evil "


def test_a_password_in_a_name_is_masked() -> None:
    assert md_text("copied from postgresql://svc:hunter2@db/x") == "copied from postgresql://\\[redacted\\]@db/x"
