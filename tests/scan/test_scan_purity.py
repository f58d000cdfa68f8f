"""The pure core calls no clock, file, process or ``eval``: checked on its source.

What it may import is the layer contracts' business (``tests/test_layers.py``,
transitive over the import graph); what it calls is checked here, since a pure
module can still reach ``open()`` or ``datetime.now()`` without importing anything.
Both read the one list of pure modules, the ``pure-core`` contract (``tests/pure_core.py``).
"""

from __future__ import annotations

import ast

from tests.pure_core import pure_files
from tests.syntax_trees import package_trees, parsed

PURE = pure_files()
FORBIDDEN_CALLS = {"open", "exec", "eval", "compile", "__import__", "input", "breakpoint"}
FORBIDDEN_ATTRIBUTES = {"now", "utcnow", "today", "read_text", "write_text", "system", "popen", "urlopen"}


def violations(filename: str, tree: ast.Module) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FORBIDDEN_CALLS:
            found.append(f"{filename}:{node.lineno} calls {node.func.id}()")
        if isinstance(node, ast.Attribute) and node.attr in FORBIDDEN_ATTRIBUTES:
            found.append(f"{filename}:{node.lineno} uses .{node.attr}")
    return found


def test_the_pure_core_calls_nothing_impure():
    assert len(PURE) >= 40
    trees = package_trees()
    problems = [v for f in PURE for v in violations(f.name, trees[f])]
    assert problems == []


def test_the_checker_catches_impurity():
    bad = "from datetime import datetime\nx = datetime.now()\nopen('f')\neval('1')\nPath('p').read_text()\n"
    assert len(violations("<source>", parsed({"bad": bad})["bad"])) == 4
