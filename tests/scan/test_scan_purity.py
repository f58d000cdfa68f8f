"""Detectors are pure: no clock, filesystem, network or subprocess, checked on their source."""

from __future__ import annotations

import ast
from pathlib import Path

import recall_dagster.detect as detect_package

DETECT_DIR = Path(detect_package.__file__).parent

FORBIDDEN_MODULES = {
    # clock
    "time", "timeit", "sched",
    # filesystem
    "os", "pathlib", "io", "shutil", "glob", "tempfile", "fileinput", "sqlite3", "pickle", "shelve",
    # network
    "socket", "ssl", "http", "urllib", "urllib3", "requests", "httpx", "aiohttp", "asyncio", "ftplib", "smtplib",
    # subprocess
    "subprocess", "multiprocessing", "concurrent", "pty",
    # nondeterminism and the graph itself
    "random", "secrets", "uuid", "recall_dagster.graph", "datahub.ingestion", "datahub.emitter",
}
FORBIDDEN_CALLS = {"open", "exec", "eval", "compile", "__import__", "input", "breakpoint"}
FORBIDDEN_ATTRIBUTES = {"now", "utcnow", "today", "read_text", "write_text", "system", "popen", "urlopen"}


def violations(source: str, filename: str = "<source>") -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        modules: list[str] = []
        if isinstance(node, ast.Import):
            modules = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            modules = [node.module]
        for module in modules:
            if any(module == m or module.startswith(m + ".") for m in FORBIDDEN_MODULES):
                found.append(f"{filename}:{node.lineno} imports {module}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FORBIDDEN_CALLS:
            found.append(f"{filename}:{node.lineno} calls {node.func.id}()")
        if isinstance(node, ast.Attribute) and node.attr in FORBIDDEN_ATTRIBUTES:
            found.append(f"{filename}:{node.lineno} uses .{node.attr}")
    return found


def test_detect_package_is_pure():
    files = sorted(DETECT_DIR.glob("*.py"))
    assert len(files) >= 11
    problems = [v for f in files for v in violations(f.read_text(), f.name)]
    assert problems == []


def test_the_checker_catches_impurity():
    bad = (
        "import time\nfrom pathlib import Path\nimport urllib.request\nfrom subprocess import run\n"
        "from datetime import datetime\nx = datetime.now()\nopen('f')\n"
    )
    assert len(violations(bad)) == 6
