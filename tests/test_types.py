"""``make test`` type-checks the package: mypy over ``recall_dagster`` as ``[tool.mypy]`` in pyproject.toml sets
it (every definition annotated, each ``type: ignore`` naming its error code), run in a process of its own so it
shares the suite's time with the other tests rather than adding to it. ``make typecheck`` runs the same alone."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.pure_core import ROOT


def test_the_package_type_checks_clean() -> None:
    mypy = Path(sys.executable).with_name("mypy")
    done = subprocess.run([str(mypy)], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert done.stdout.startswith("Success: no issues found")
