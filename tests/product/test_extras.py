"""A command that needs an optional extra which is not installed names the extra and exits 2, no traceback."""

from __future__ import annotations

import subprocess
import sys
import tomllib

from recall_dagster.errors import EXIT_USAGE
from recall_dagster.extras import EXTRAS, missing_extra
from recall_dagster.settings import REPO_ROOT

# `recall mcp` where the MCP SDK cannot be imported: a None in sys.modules makes `import mcp` fail as if absent.
WITHOUT_MCP = "import sys; sys.modules['mcp'] = None; sys.argv = ['recall', 'mcp']; " \
              "from recall_dagster.cli import main; main()"


def test_recall_mcp_without_the_sdk_names_the_extra() -> None:
    done = subprocess.run([sys.executable, "-c", WITHOUT_MCP], capture_output=True, text=True, timeout=120)
    assert done.returncode == EXIT_USAGE
    assert "pip install 'recall-dagster[mcp]'" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_missing_module_no_extra_brings_is_not_explained_away() -> None:
    assert missing_extra(ModuleNotFoundError("No module named 'nosuch'", name="nosuch")) is None
    known = missing_extra(ModuleNotFoundError("No module named 'sklearn.base'", name="sklearn.base"))
    assert known is not None and "recall-dagster[impact]" in str(known)


def test_every_extra_named_is_one_pyproject_declares() -> None:
    declared = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"]
    assert {extra for extra, _ in EXTRAS.values()} <= set(declared)
