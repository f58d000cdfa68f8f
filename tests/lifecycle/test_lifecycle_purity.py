"""The lifecycle's core (and the column lineage it walks) is pure: no graph, no reader or writer, no clock, no
files, checked on its imports."""

from __future__ import annotations

import ast
from pathlib import Path

import recall_dagster.lifecycle as lifecycle_package

PURE = (
    "estate/columns", *(f"lifecycle/{m}" for m in ("blast", "window", "verdict", "assess", "incidents", "postmortem",
                                                   "gate", "records", "override")),
)
IMPURE = (
    "time", "os", "pathlib", "shutil", "subprocess", "socket", "requests", "sqlite3", "psycopg2",
    "recall_dagster.graph", "recall_dagster.writeback", "seed.stack",
    "recall_dagster.lifecycle.read", "recall_dagster.lifecycle.service", "recall_dagster.lifecycle.publish",
    "recall_dagster.lifecycle.ledger", "recall_dagster.lifecycle.rows",
)


def imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Attribute) and node.attr in ("now", "utcnow", "today"):
            found.add(f"<clock .{node.attr}>")
    return found


def test_the_core_modules_import_nothing_impure() -> None:
    root = Path(lifecycle_package.__file__).parent.parent
    def impure(module: str) -> bool:
        return module.startswith("<clock") or any(module == i or module.startswith(i + ".") for i in IMPURE)

    problems = {name: sorted(filter(impure, imports(root / f"{name}.py"))) for name in PURE}
    assert {n: p for n, p in problems.items() if p} == {}
