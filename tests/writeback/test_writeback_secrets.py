"""Planted secrets never leave the process: not in the output, the errors, the evidence or the state files."""

from __future__ import annotations

import re
import socket
from contextlib import closing
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from recall_dagster.cli import cli
from recall_dagster.secrets import redact
from recall_dagster.settings import Settings

SECRETS = {
    "DATAHUB_GMS_TOKEN": "gms-token-7f3a9c",
    "GITHUB_TOKEN": "ghp-token-51d0be",
}


def _closed_port() -> int:
    with closing(socket.socket()) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_secrets_stay_out_of_everything_a_failing_write_back_produces(
    lite_path: Path, settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = _closed_port()
    webhook = f"http://127.0.0.1:{port}/services/slack-secret-4c2e81"
    for name, value in {**SECRETS, "RECALL_SLACK_WEBHOOK_URL": webhook}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("RECALL_HOME", str(settings.home))
    monkeypatch.setenv("RECALL_GRAPH", str(lite_path))
    overlay = tmp_path / "team.yaml"
    overlay.write_text(
        "writeback:\n  notify:\n    slack: {enabled: true}\n"
        f"    github: {{enabled: true, repo: acme/models, api_url: 'http://127.0.0.1:{port}'}}\n"
    )
    result = CliRunner().invoke(cli, ["scan", "--write", "--json", "--config", str(overlay)])
    assert result.exit_code in (0, 1), result.output
    assert "ConnectionError" in result.stdout, "the channels failed, and their errors were reported"
    produced = [result.stdout, result.stderr or ""]
    produced += [p.read_text(errors="replace") for p in settings.home.rglob("*") if p.is_file()]
    for secret in (*SECRETS.values(), webhook, "slack-secret-4c2e81"):
        assert not any(secret in text for text in produced), f"{secret} leaked"
    assert "[redacted]" in result.stdout


def test_redact_masks_values_and_a_webhook_path_but_not_short_words() -> None:
    env = {"DATAHUB_GMS_TOKEN": "abc", "RECALL_SLACK_WEBHOOK_URL": "https://hooks.example/T0/B1/xyz789secret"}
    text = "posting to https://hooks.example/T0/B1/xyz789secret failed; url: /T0/B1/xyz789secret; abc is fine"
    assert redact(text, environ=env) == "posting to [redacted] failed; url: [redacted]; abc is fine"
    assert redact("token tok-123456 refused", ["tok-123456"], environ={}) == "token [redacted] refused"


def test_a_token_is_masked_whatever_variable_holds_it() -> None:
    """Not only the three variables Recall reads: a team's notify section may name its own, and a secret set
    for anything else (a dbt profile's password, an API key) must not reach what Recall prints either."""
    env = {"TEAM_ALERTS_WEBHOOK_URL": "https://hooks.example/T9/B9/zz-webhook-77", "DBT_PASSWORD": "hunter2-warehouse",
           "OPENAI_API_KEY": "sk-live-000111",
           "PATH": "/usr/local/bin:/usr/bin"}
    said = redact("hook https://hooks.example/T9/B9/zz-webhook-77, pw hunter2-warehouse, key sk-live-000111, "
                  "path /usr/local/bin:/usr/bin", environ=env)
    assert said == "hook [redacted], pw [redacted], key [redacted], path /usr/local/bin:/usr/bin"


def test_credentials_in_a_url_are_never_shown() -> None:
    from recall_dagster.graph.port import location_of

    assert redact("GMS at http://admin:s3cret@gms:8080/api failed", environ={}) == (
        "GMS at http://[redacted]@gms:8080/api failed")
    assert redact("postgresql+psycopg2://bob:pw@db/warehouse", environ={}) == "postgresql+psycopg2://[redacted]@db/warehouse"
    assert location_of("http://admin:s3cret@gms:8080/") == "http://gms:8080", "reports and ledgers name the server"


# What the masking of a URL's credentials must equal: the pattern it used to be, which is right but backtracks
# through a long word at each of its letters (quadratic: a 100 KB description took a minute).
_REFERENCE = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)[^/@\s]+@")
_URLISH = "aZ09+.-:/@ \t\nh\u00e9\u2028x"


@given(st.text(alphabet=_URLISH, max_size=120) | st.lists(
    st.sampled_from(["http://", "a:b@", "://", "@", "/", " ", "x", "1a", "db+x://u:p@h", "\u00e9"]),
    max_size=30).map("".join))
@settings(max_examples=400, deadline=None)
def test_credentials_are_masked_as_the_pattern_would(text: str) -> None:
    assert redact(text, environ={}) == _REFERENCE.sub(lambda m: f"{m['scheme']}[redacted]@", text)


@given(st.text(alphabet="abcXYZ019+.-", min_size=1, max_size=40).map(lambda w: (w * (200_000 // len(w) + 1))[:200_000]))
@settings(max_examples=3, deadline=None)
def test_a_long_word_is_read_once_not_once_per_letter(word: str) -> None:
    """A description of one 200 KB word: each character is read a bounded number of times, so this returns at
    once (the backtracking pattern needed minutes); its credentials, if any, are still found."""
    assert redact(word, environ={}) == word
    assert redact(word + "x://user:pw@host", environ={}) == word + "x://[redacted]@host"
