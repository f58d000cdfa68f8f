"""Fixtures shared by every test folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest

DATAHUB_CLI = Path(sys.executable).with_name("datahub")


@pytest.fixture
def lite_cli(tmp_path: Path) -> Callable[[Path], Callable[..., str]]:
    """Run DataHub's own ``datahub lite`` CLI against a Lite file; returns its stdout.

    ``datahub lite get/ls`` have no --file flag: they read the ``lite`` block of
    ~/.datahubenv, which must also hold a ``gms`` block to validate, so each call
    runs with a HOME of its own.
    """

    def for_file(graph_file: Path) -> Callable[..., str]:
        home = tmp_path / "datahub-home"
        home.mkdir(exist_ok=True)
        (home / ".datahubenv").write_text(
            "gms:\n  server: http://127.0.0.1:9\n"
            f"lite:\n  type: sqlite\n  config:\n    file: {graph_file}\n"
        )
        env = {**os.environ, "HOME": str(home), "DATAHUB_TELEMETRY_ENABLED": "false"}

        def run(*args: str) -> str:
            done = subprocess.run(
                [str(DATAHUB_CLI), *args], env=env, capture_output=True, text=True, timeout=120, check=False
            )
            assert done.returncode == 0, done.stderr
            return done.stdout

        return run

    return for_file
