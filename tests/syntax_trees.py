"""Python source as syntax trees, parsed in a fresh interpreter.

CPython 3.11 counts the AST converter's recursion per interpreter, not per thread (python/cpython#106905): an
``ast.parse`` while another thread of the test process formats a traceback (3.11's tracebacks parse source to
place their carets) fails with ``SystemError: AST constructor recursion depth mismatch``. A test that reads
Recall's own source therefore parses it in a child interpreter that runs nothing else, and gets the trees back
pickled.
"""

from __future__ import annotations

import ast
import functools
import pickle
import subprocess
import sys
from pathlib import Path

import recall_dagster

PACKAGE = Path(recall_dagster.__file__).parent

_PARSE = ("import ast, pickle, sys\n"
          "sources = pickle.load(sys.stdin.buffer)\n"
          "pickle.dump({name: ast.parse(text, name) for name, text in sources.items()}, sys.stdout.buffer)\n")


def parsed(sources: dict[str, str]) -> dict[str, ast.Module]:
    """Each source's tree, by the name it was given."""
    done = subprocess.run([sys.executable, "-c", _PARSE], input=pickle.dumps(sources), capture_output=True,
                          check=False)
    assert done.returncode == 0, done.stderr.decode()
    return pickle.loads(done.stdout)


@functools.cache
def package_trees() -> dict[Path, ast.Module]:
    """Every module of recall_dagster, by its path."""
    paths = sorted(PACKAGE.rglob("*.py"))
    trees = parsed({str(path): path.read_text(encoding="utf-8") for path in paths})
    return {path: trees[str(path)] for path in paths}


def imported_modules(tree: ast.Module) -> set[str]:
    """Every module an import statement of the tree names, and for ``from m import n`` also ``m.n``."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names
