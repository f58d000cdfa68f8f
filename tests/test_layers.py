"""The layers hold over the whole import graph, not only a module's own imports, and over every module.

``pyproject.toml`` (``[tool.importlinter]``) names the contracts: the pure core
reaches no I/O through however many modules, and no lower layer imports a
higher one. The pure lifecycle window used to pull YAML, file locks and the
settings in through the scan module while a check of its direct imports passed.
A module in no layer is held to nothing, so every one must be in a layer.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from tests.pure_core import ROOT, pure_modules

PURE = pure_modules()
IO = ("recall_dagster.graph", "recall_dagster.settings", "recall_dagster.files", "recall_dagster.config.load",
      "recall_dagster.scan", "recall_dagster.clock", "recall_dagster.warehouse", "recall_dagster.writeback",
      "yaml", "sqlite3", "sqlalchemy", "dagster", "mlflow", "pandas")


def test_every_layer_contract_is_kept() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run([str(lint), "--no-cache", "--no-logo"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "Contracts: 2 kept, 0 broken." in done.stdout


def test_importing_the_pure_core_loads_no_reader_writer_or_clock() -> None:
    """What the contract says of the source, checked on a fresh interpreter: a package ``__init__`` that
    re-exports a reader (as ``lifecycle`` and ``estate`` did) loads it whatever module is asked for."""
    probe = (f"import sys\nfor m in {PURE!r}: __import__(m)\n"
             f"print(__import__('json').dumps(sorted(m for m in sys.modules "
             f"if any(m == i or m.startswith(i + '.') for i in {IO!r}))))")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == []


def _layered() -> set[str]:
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    layers = next(c for c in contracts if c["id"] == "layers")["layers"]
    return {m.strip().strip("()") for layer in layers for m in re.split(r"[:|]", layer)}


def _docstring_only(path: Path) -> bool:
    """A package ``__init__`` holding nothing but its docstring (``acks``, ``config``, ``lifecycle``): its modules
    lie in several layers, and it imports none of them, so it has no layer of its own to be in."""
    body = ast.parse(path.read_text()).body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return path.name == "__init__.py" and not body


def test_every_product_module_is_in_a_layer() -> None:
    """A module in no layer may import any other and be imported by any: the contract says nothing of it, and a
    layered module can reach past its layer through it unnoticed until something else is put in a layer."""
    layered = _layered()
    unplaced = []
    for path in sorted((ROOT / "recall_dagster").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if module == "recall_dagster" or _docstring_only(path):  # the root holds every layer
            continue
        if not any(module == m or module.startswith(m + ".") for m in layered):
            unplaced.append(module)
    assert unplaced == [], f"in no layer of [tool.importlinter]'s layers contract: {unplaced}"
