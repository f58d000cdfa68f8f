"""The layers hold over the whole import graph, not only a module's own imports.

``pyproject.toml`` (``[tool.importlinter]``) names the contracts: the pure core
reaches no I/O through however many modules, and no lower layer imports a
higher one. The pure lifecycle window used to pull YAML, file locks and the
settings in through the scan module while a check of its direct imports passed.
"""

from __future__ import annotations

import json
import subprocess
import sys
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
