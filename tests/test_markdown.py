"""Graph text in Recall's Markdown reads as the characters it is: no link, image, HTML, code span, table cell
break or new line from the data, and no secret."""

from __future__ import annotations

from recall_dagster.markdown import md_text


def test_a_name_that_is_markdown_is_shown_as_text() -> None:
    shown = md_text("orders[click](http://evil.example) <img src=x onerror=alert(1)> `x` a|b \\")
    assert shown == ("orders\\[click\\](http://evil.example) &lt;img src=x onerror=alert(1)&gt; \\`x\\` a\\|b \\\\")


def test_a_description_stays_on_its_line_and_writes_out_its_control_characters() -> None:
    """A browser shows ``\\x1b`` and ``\\u202e`` where the escape and the override stood (:func:`shown`)."""
    assert md_text("first\n# heading\r\x1b[31mred\u202eevil\u200b") == (
        "first # heading \\\\x1b\\[31mred\\\\u202eevil\\\\u200b")


def test_a_password_in_a_name_is_masked() -> None:
    assert md_text("copied from postgresql://svc:hunter2@db/x") == "copied from postgresql://\\[redacted\\]@db/x"


def test_an_incident_description_written_to_datahub_shows_a_test_name_as_text() -> None:
    """DataHub renders an incident's description as Markdown: a test named as a link stays text there."""
    from recall_dagster.lifecycle.incidents import IncidentEntry
    from recall_dagster.lifecycle.publish import incident_description

    snapshot = {"assertions": [{"name": "[click](http://evil.example)", "on": "<b>orders</b>", "failing": True}],
                "origins": ["raw.orders.amount"], "window": {}, "models": []}
    entry = IncidentEntry("i", "urn:li:incident:i", "ACTIVE", (), (), 0, 0, "f", snapshot)
    said = incident_description(entry)
    assert "\\[click\\](http://evil.example) on &lt;b&gt;orders&lt;/b&gt;" in said and "<b>" not in said


def test_an_acknowledgement_s_reason_is_text_in_its_document() -> None:
    from recall_dagster.acks.model import Acknowledgement
    from recall_dagster.acks.store import _markdown

    ack = Acknowledgement.make("upstream_staleness", "urn:li:dataset:(urn:li:dataPlatform:postgres,a.b,PROD)", None,
                               (), "see ![x](http://evil.example/p.png) <script>", "ana@team", 0, 1)
    assert "!\\[x\\](http://evil.example/p.png) &lt;script&gt;" in _markdown(ack)
