"""The secrets Recall is handed (the GMS token, the Slack webhook, the GitHub token), kept out of what it says.

Errors from HTTP libraries quote URLs, and a Slack webhook URL *is* its secret;
anything that leaves the process (a message, a notice, evidence, ``--json``)
goes through :func:`redact` first, which masks the value of every variable that
holds one, and the credentials of any URL that carries them.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from typing import Iterable, Mapping
from urllib.parse import urlsplit

# Read from the environment whatever recall.yaml says; the notify section may name more, and any variable whose
# name says it holds a secret is masked too (_SECRET_NAME): a token is a token wherever it was set.
SECRET_VARIABLES = ("DATAHUB_GMS_TOKEN", "RECALL_SLACK_WEBHOOK_URL", "GITHUB_TOKEN")
_SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|WEBHOOK|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIAL",
                          re.IGNORECASE)
MASK = "[redacted]"
_SHORTEST = 6  # shorter values are not secrets worth masking, and would mask ordinary words


def redact(text: str, values: Iterable[str] = (), environ: Mapping[str, str] | None = None) -> str:
    """``text`` with every secret masked: the known variables' values, those of every variable named like a
    secret (``*_TOKEN``, ``*_WEBHOOK_URL``, ``*PASSWORD*``...), and ``values`` (a channel's own)."""
    env = os.environ if environ is None else environ
    named = {name for name in env if _secret_name(name)}
    secrets = {env.get(name, "") for name in (*SECRET_VARIABLES, *named)} | set(values)
    secrets |= {_path(v) for v in secrets}  # HTTP errors quote a URL's path without its host
    for value in sorted((v for v in secrets if len(v) >= _SHORTEST), key=len, reverse=True):
        text = text.replace(value, MASK)
    return _userinfo_masked(text)


@lru_cache(maxsize=4096)
def _secret_name(name: str) -> bool:
    """Whether a variable's name says it holds a secret: asked of every variable on every mask, and every text
    Recall shows is masked (:func:`recall_dagster.shown.shown`), so each name is matched once."""
    return _SECRET_NAME.search(name) is not None


_SCHEME = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-")


def _userinfo_masked(text: str) -> str:
    """Credentials written into a URL (``--graph http://admin:pass@host``, a SQLAlchemy URL) masked: whatever
    the scheme (a letter, then letters, digits, ``+.-``), what stands between ``//`` and ``@`` (no ``/``, no
    space) is somebody's password.

    Found from each ``://`` outwards rather than by a pattern tried at every letter: a pattern backtracks
    through a long word at each of its letters (a 100 KB description took a minute), and this reads each
    character at most twice."""
    out: list[str] = []
    done = 0  # text[:done] is in out
    at = text.find("://")
    while at != -1:
        start = at
        while start > done and text[start - 1] in _SCHEME:
            start -= 1
        while start < at and not text[start].isalpha():
            start += 1  # the scheme begins at the run's first letter (the run is ASCII)
        end = at + 3
        while end < len(text) and text[end] not in "/@" and not text[end].isspace():
            end += 1
        if start < at and end > at + 3 and end < len(text) and text[end] == "@":
            out += [text[done:at + 3], MASK, "@"]
            done = end + 1
        at = text.find("://", max(at + 1, done))
    return "".join(out) + text[done:]


def _path(value: str) -> str:
    """The path and query of a URL, where a webhook keeps its secret; "" for anything else."""
    parts = urlsplit(value)
    if not parts.scheme or not parts.netloc:
        return ""
    return parts.path + (f"?{parts.query}" if parts.query else "")
