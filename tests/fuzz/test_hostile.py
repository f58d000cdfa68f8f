"""Hostile names and descriptions through every command, write-back notification and MCP tool: nothing crashes,
no file lands outside its folder, no notification pings, links or tags from the data, no terminal escape or
invisible character from the data reaches a person, and no secret is repeated."""

from __future__ import annotations

import re
import tempfile
import unicodedata
from pathlib import Path

from hypothesis import HealthCheck, given, settings

from tests.conftest import Inbox, serving
from tests.fuzz.hostile import (GITHUB_TOKEN, GMS_TOKEN, PASSWORDS, SLACK_PATH, Estate, Said, hostile_estates,
                                run_everything)

SECRETS = (GMS_TOKEN, GITHUB_TOKEN, SLACK_PATH, *PASSWORDS)
# Slack acts on <...> (mentions, channel pings, links); with &, < and > escaped none can come from the data.
SLACK_LIVE = re.compile(r"[<>]")
# GitHub pings @name, renders HTML tags and [text](target) links; each must arrive neutralised.
GITHUB_LIVE = {
    "a mention": re.compile(r"(?<![\w`\\])@[A-Za-z0-9]"),
    "an HTML tag": re.compile(r"<[A-Za-z!/?]"),
    "a link": re.compile(r"(?<!\\)\]\("),
}
# Markdown Recall writes (evidence, documents) renders HTML tags and links the same way.
MARKDOWN_LIVE = {"an HTML tag": GITHUB_LIVE["an HTML tag"], "a link": GITHUB_LIVE["a link"]}


def unseen(text: str) -> set[str]:
    """What in ``text`` a person does not see as itself: an ESC or other control the terminal obeys, a bidi
    override that reorders what follows, a zero-width or other format character (but the one GitHub text puts
    after an ``@`` so that it pings no one), a line or paragraph separator. Line breaks are Recall's own."""
    return {f"U+{ord(c):04X}" for i, c in enumerate(text) if c != "\n"
            and (unicodedata.category(c)[0] == "C" or unicodedata.category(c) in ("Zl", "Zp"))
            and not (c == "\u200b" and text[i - 1:i] == "@")}


def _outputs(said: Said) -> dict[str, str]:
    """What people read: the terminal, assistants' answers, the channels, the Markdown evidence and documents.
    (Recall's own records, the JSON and pickles under RECALL_HOME, keep graph URNs as the graph spells them.)"""
    return {**{f"recall {c}": out for c, out in said.terminal.items()},
            **{f"MCP {t}": answer for t, answer in said.mcp.items()},
            **{f"Slack message {i}": text for i, text in enumerate(said.slack)},
            **{f"GitHub call {i}": repr(call) for i, call in enumerate(said.github)},
            **{f"file {p.name}": text for p, text in said.files.items() if p.suffix == ".md"},
            **{f"document {i}": text for i, text in enumerate(said.documents)}}


def problems(said: Said) -> list[str]:
    """What a user would notice: a crash, a name the graph holds refused, a stray file, a ping or link nobody
    meant, a secret on screen."""
    found = [*said.crashes, *(f"refused: {r}" for r in said.refusals),
             *(f"written outside RECALL_HOME: {p}" for p in said.strays)]
    if not (said.slack and said.github):
        found.append("no notification was sent: nothing was checked")
    found += [f"Slack would act on {text!r}" for text in said.slack if SLACK_LIVE.search(text)]
    found += [f"a GitHub {call['method']} carries {what}: {call['body']!r}" for call in said.github
              for what, live in GITHUB_LIVE.items() if live.search(call.get("body") or "")]
    found += [f"a GitHub issue title is not one line of text: {call['title']!r}" for call in said.github
              if not (call.get("title") or " ").isprintable()]
    markdown = {f"file {p.name}": t for p, t in said.files.items() if p.suffix == ".md"}
    found += [f"{where} carries {what}:\n{text}"
              for where, text in {**markdown, **{f"document {i}": t for i, t in enumerate(said.documents)}}.items()
              for what, live in MARKDOWN_LIVE.items() if live.search(text)]
    found += [f"{where} repeats the secret {secret!r}:\n{text}"
              for where, text in _outputs(said).items() for secret in SECRETS if secret in text]
    shown = {**{f"recall {c}": out for c, out in said.terminal.items()},
             **{f"Slack message {i}": text for i, text in enumerate(said.slack)},
             **{f"GitHub {call['method']} {part}": call[part] for call in said.github
                for part in ("title", "body") if call.get(part)},
             **markdown, **{f"document {i}": text for i, text in enumerate(said.documents)}}
    found += [f"{where} carries {sorted(chars)} from the data:\n{text!r}"
              for where, text in shown.items() if (chars := unseen(text))]
    return found


@settings(max_examples=10, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(hostile_estates())
def test_hostile_metadata_is_shown_as_text_everywhere_and_never_acted_on(estate: Estate) -> None:
    with tempfile.TemporaryDirectory() as scratch, serving(Inbox()) as inbox:
        found = problems(run_everything(estate, Path(scratch) / "deep" / "work", inbox))
    assert not found, f"{found[0]}\n({len(found)} problem(s) in all)\n--- drawn:\n{estate.describe()}"
