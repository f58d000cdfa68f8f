"""The pure core, listed once: the source modules of the ``pure-core`` contract in ``pyproject.toml``, which
import-linter holds over the import graph (``tests/test_layers.py``) and ``tests/scan/test_scan_purity.py``
holds over each module's calls."""

from __future__ import annotations

import tomllib
from pathlib import Path

import recall_dagster

ROOT = Path(__file__).parents[1]


def pure_modules() -> tuple[str, ...]:
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    return tuple(next(c for c in contracts if c["id"] == "pure-core")["source_modules"])


def pure_files() -> list[Path]:
    """Each pure module's source file; a pure package's every file."""
    package = Path(recall_dagster.__file__).parent
    files: list[Path] = []
    for module in pure_modules():
        path = package.joinpath(*module.split(".")[1:])
        files.extend(sorted(path.rglob("*.py")) if path.is_dir() else [path.with_suffix(".py")])
    return files
