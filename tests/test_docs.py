"""The documentation builds with --strict, its generated pages are current, and its runnable blocks run."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from recall_dagster.cli import reference as cli_reference
from recall_dagster.contracts import reference as contracts_reference
from recall_dagster.settings import REPO_ROOT

DOCS = REPO_ROOT / "docs"
RUNNABLE = re.compile(r"<!-- runnable -->\n```bash\n(.*?)```", flags=re.S)


@pytest.mark.parametrize(("module", "page"), [(cli_reference, "cli.md"), (contracts_reference, "contracts.md")])
def test_a_generated_page_is_the_one_the_code_writes(module, page: str) -> None:  # noqa: ANN001 - a module
    assert (DOCS / page).read_text(encoding="utf-8") == module.reference(), (
        f"run `python -m {module.__name__} > docs/{page}`")


def test_the_site_builds_with_strict(tmp_path: Path) -> None:
    """A broken link, a page left out of the navigation or a missing file fails the build (make docs)."""
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
                          cwd=REPO_ROOT, capture_output=True, text=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "site" / "configuration" / "index.html").exists()


def runnable_lines() -> list[tuple[str, str]]:
    """Each command line of a block the docs mark ``<!-- runnable -->``, with its page."""
    found = []
    for page in sorted([REPO_ROOT / "README.md", *DOCS.glob("*.md")]):
        for block in RUNNABLE.findall(page.read_text(encoding="utf-8")):
            found += [(page.name, line.split("#", 1)[0].strip()) for line in block.splitlines()
                      if line.split("#", 1)[0].strip()]
    return found


@pytest.mark.parametrize(("page", "line"), runnable_lines())
def test_a_runnable_line_of_the_docs_runs_as_written(page: str, line: str, tmp_path: Path) -> None:
    """Run from the checkout, on a fresh RECALL_HOME, as a person pastes it."""
    done = subprocess.run(line, shell=True, cwd=REPO_ROOT, capture_output=True, text=True,
                          env={**os.environ, "RECALL_HOME": str(tmp_path / "home")}, timeout=300)
    assert done.returncode == 0, f"{page}: {line}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"


def test_the_docs_mark_lines_to_run() -> None:
    assert len(runnable_lines()) >= 2
