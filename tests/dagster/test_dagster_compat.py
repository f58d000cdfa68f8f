"""Recall leans on a few Dagster internals (recall_dagster/defs/_compat.py, each with its reason). They were
verified on one Dagster version: an upgrade must fail here, loudly, until they are verified again."""

from __future__ import annotations

import ast
from pathlib import Path

import dagster

from recall_dagster.defs import _compat
from recall_dagster.settings import REPO_ROOT


def test_the_installed_dagster_is_the_one_the_internals_were_verified_with() -> None:
    pinned = next(line.split("==")[1].strip().strip('",') for line in (REPO_ROOT / "pyproject.toml").read_text()
                  .splitlines() if line.strip().startswith('"dagster=='))
    assert dagster.__version__ == pinned == _compat.VERIFIED_WITH, (
        f"Dagster {dagster.__version__} is installed; recall_dagster/defs/_compat.py was verified with "
        f"{_compat.VERIFIED_WITH}: re-verify each use there, then move VERIFIED_WITH and the pin together")


def test_no_module_but_compat_imports_dagster_internals() -> None:
    offenders = []
    for path in sorted((REPO_ROOT / "recall_dagster").rglob("*.py")):
        if path.name == "_compat.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            module = node.module if isinstance(node, ast.ImportFrom) else None
            names = [a.name for a in node.names] if isinstance(node, (ast.Import, ast.ImportFrom)) else []
            if any(n and (n.startswith("dagster._") or n.startswith("dagster_shared")) for n in [module, *names]):
                offenders.append(str(Path(path).relative_to(REPO_ROOT)))
    assert offenders == [], "Dagster internals belong in recall_dagster/defs/_compat.py, each with its reason"
