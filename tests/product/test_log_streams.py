"""Libraries' log lines go where Recall sends its own output: through the CLI's masking of secrets."""

from __future__ import annotations

import io
import logging
import sys

import click
import pytest
from click.testing import CliRunner

from recall_dagster.cli import RecallGroup

TOKEN = "gms-token-9d41e7"


def test_a_library_logging_a_secret_through_a_handler_made_at_import_prints_it_masked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """dbt's telemetry library calls ``logging.basicConfig()`` on import: its handler holds the process's
    stderr from before any command wrapped it, and a library line quoting a token went out unmasked."""
    monkeypatch.setenv("DATAHUB_GMS_TOKEN", TOKEN)
    terminal = io.StringIO()
    monkeypatch.setattr(sys, "__stderr__", terminal)
    monkeypatch.setattr(sys, "stderr", terminal)
    early = logging.StreamHandler()  # as basicConfig makes it, on the stderr of the moment
    root = logging.getLogger()
    root.addHandler(early)

    @click.group(cls=RecallGroup)
    def app() -> None:
        """A command line built like recall's."""

    @app.command()
    def connect() -> None:
        logging.getLogger("datahub.ingestion.test").warning("connecting with token %s", TOKEN)

    try:
        result = CliRunner().invoke(app, ["connect"])
    finally:
        root.removeHandler(early)
    assert result.exit_code == 0, result.output
    shown = terminal.getvalue() + result.output + (result.stderr or "")
    assert "connecting with token" in shown, "the line is shown"
    assert TOKEN not in shown, "its secret is not"
    assert early.stream is terminal, "the handler is the terminal's again after the command"
