"""The smallest repair for a regressed model, proposed as an edit and proven in a temporary copy.

A repair is only worth proposing if it is small enough to review at a glance
and shown to work, so every edit is checked against ``diagnose.repair``'s
limits, applied to a throwaway copy of the project, compiled, and retrained
there by the team's own command. The working tree is never written: a repair
that was not reviewed must not land anywhere a person could commit it.
"""

from __future__ import annotations

import ast
import codecs
import difflib
import fnmatch
import json
import os
import py_compile
import re
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Mapping, Sequence, cast

from recall_dagster.diagnose.config import RepairConfig
from recall_dagster.errors import EXIT_USAGE, ConfigError, RecallError

OUTPUT_LINES = 40  # the tail of a command's output a validation keeps: enough for a traceback
_NEWLINE = re.compile(rb"\r\n|\r|\n")  # the line ends Python's tokenizer counts lines by


class RepairRefused(RecallError):
    """A repair that cannot be made or lies outside ``diagnose.repair``'s limits."""

    exit_code = EXIT_USAGE


@dataclass(frozen=True)
class Edit:
    """One file's whole text before and after a repair; ``path`` is project-relative and POSIX."""

    path: str
    before: str
    after: str
    description: str

    @cached_property
    def _diff(self) -> list[str]:
        return list(difflib.unified_diff(
            self.before.splitlines(keepends=True),
            self.after.splitlines(keepends=True),
            fromfile=f"a/{self.path}",
            tofile=f"b/{self.path}",
        ))

    @property
    def patch(self) -> str:
        """A unified diff ``git apply`` and reviewers read; a last line without a newline is marked as git marks it."""
        marker = "\n\\ No newline at end of file\n"
        return "".join(line if line.endswith("\n") else line + marker for line in self._diff)

    @property
    def changed_lines(self) -> int:
        """Lines added plus lines removed: the size ``max_changed_lines`` limits."""
        return sum(1 for line in self._diff[2:] if line[:1] in ("+", "-"))


def _module_file(project: Path, module: str) -> str:
    parts = module.split(".")
    if not all(part.isidentifier() for part in parts):
        raise RepairRefused(f"`{module}` is not a dotted module name like ml_models.transforms")
    base = "/".join(parts)
    candidates = (f"{base}/__init__.py", f"{base}.py")  # a package shadows a module of its name, as in Python
    for rel in candidates:
        if (project / rel).is_file():
            return rel
    raise RepairRefused(f"module {module} is not in {project}: neither {candidates[1]} nor {candidates[0]} exists")


def _is_number_literal(node: ast.expr) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
        node = node.operand
    return isinstance(node, ast.Constant) and isinstance(node.value, (int, float, complex))


def _guard(body: bytes, line_starts: list[int], node: ast.BinOp) -> bytes:
    """``body`` with the denominator of ``node`` (and nothing else) wrapped in a zero guard."""
    right = node.right
    start = line_starts[right.lineno - 1] + right.col_offset  # AST columns are UTF-8 byte offsets
    end_line, end_col = cast(int, right.end_lineno), cast(int, right.end_col_offset)  # set on every parsed node
    end = line_starts[end_line - 1] + end_col
    denominator = body[start:end]
    return body[:start] + b"(" + denominator + b").where((" + denominator + b") != 0)" + body[end:]


def guarded_division_edits(project: Path, module: str, function: str) -> list[Edit]:
    """One edit per true division in ``function``, in source order, each guarding just that denominator.

    A zero denominator in pandas gives an infinity that poisons a model's
    features; ``b.where(b != 0)`` turns it into NaN, which the training code
    already drops or imputes. The file is edited at the exact byte offsets of
    the denominator so the diff shows that change and nothing else. Divisions
    by a number literal are left alone: they can never be zero (or always are),
    and a literal has no ``.where``.
    """
    rel = _module_file(project, module)
    data = (project / rel).read_bytes()
    try:
        before = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise RepairRefused(f"{rel} is not UTF-8 text ({err.reason} at byte {err.start})") from None
    bom = codecs.BOM_UTF8 if data.startswith(codecs.BOM_UTF8) else b""
    body = data[len(bom):]  # the parser skips a BOM: line 1's columns do not count it
    try:
        tree = ast.parse(body, filename=rel)
    except SyntaxError as err:
        raise RepairRefused(f"{rel} does not parse: {err.msg} (line {err.lineno})") from None
    defined = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == function]
    if not defined:
        raise RepairRefused(f"{rel} has no top-level function `{function}`")
    divisions = sorted(
        (n for n in ast.walk(defined[-1]) if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div)),
        key=lambda n: (n.right.lineno, n.right.col_offset),  # the denominators' order is the operators' order
    )
    if not divisions:
        raise RepairRefused(f"`{function}` in {rel} contains no division")
    guardable = [n for n in divisions if not _is_number_literal(n.right)]
    if not guardable:
        raise RepairRefused(f"`{function}` in {rel} divides only by number literals, which need no zero guard")
    line_starts = [0] + [m.end() for m in _NEWLINE.finditer(body)]
    text = body.decode("utf-8")
    edits = []
    for node in guardable:
        shown = " ".join((ast.get_source_segment(text, node) or "").split())
        edits.append(Edit(
            path=rel,
            before=before,
            after=(bom + _guard(body, line_starts, node)).decode("utf-8"),
            description=f"guard the division `{shown}` at {rel}:{node.lineno} against a zero denominator",
        ))
    return edits


def check_limits(edit: Edit, config: RepairConfig) -> None:
    """Refuse an edit outside the project, to a protected or unlisted file, or larger than allowed."""
    path = PurePosixPath(edit.path)
    if path.is_absolute() or ".." in path.parts or not path.parts:
        raise RepairRefused(f"{edit.path}: a repair may only edit a file inside the project")
    rel = path.as_posix()
    protected = [glob for glob in config.protected if fnmatch.fnmatchcase(rel, glob)]
    if protected:
        raise RepairRefused(f"{rel} is protected by diagnose.repair.protected ({protected[0]})")
    if not config.allowed:
        raise RepairRefused(f"{rel}: diagnose.repair.allowed is empty, so every edit is refused; "
                            "list the globs of files a repair may edit")
    if not any(fnmatch.fnmatchcase(rel, glob) for glob in config.allowed):
        raise RepairRefused(f"{rel} matches none of diagnose.repair.allowed ({', '.join(config.allowed)})")
    if edit.changed_lines > config.max_changed_lines:
        raise RepairRefused(f"{rel}: the repair changes {edit.changed_lines} lines, "
                            f"more than diagnose.repair.max_changed_lines ({config.max_changed_lines})")


@dataclass(frozen=True)
class Validation:
    """What happened in one copy: whether the edit compiled, how the command ended, what it measured.

    ``edit`` is None for a repair that changes no file (a retrain on other
    data); ``returncode`` is None when the command was not run (the edit did
    not compile, or there is no command) or ran past its timeout.
    """

    edit: Edit | None
    compiled: bool
    returncode: int | None
    metrics: dict[str, float] | None
    seconds: float
    output: str

    @property
    def ok(self) -> bool:
        """The edit compiled and the command ran cleanly, printing metrics to judge it by."""
        return self.compiled and self.returncode == 0 and self.metrics is not None

    def to_json(self) -> dict[str, Any]:
        edit = self.edit
        return {
            "path": edit.path if edit else None,
            "description": edit.description if edit else None,
            "patch": edit.patch if edit else None,
            "changed_lines": edit.changed_lines if edit else 0,
            "compiled": self.compiled,
            "returncode": self.returncode,
            "metrics": self.metrics,
            "seconds": self.seconds,
            "output": self.output,
            "ok": self.ok,
        }


def _tail(text: str) -> str:
    return "\n".join(text.splitlines()[-OUTPUT_LINES:])


def _metrics(stdout: str) -> dict[str, float] | None:
    """The last stdout line that is a JSON object with numeric values, its other values dropped."""
    for line in reversed(stdout.splitlines()):
        try:
            parsed = json.loads(line)
        except ValueError:
            continue
        if not isinstance(parsed, dict):
            continue
        numbers = {str(k): float(v) for k, v in parsed.items()
                   if isinstance(v, (int, float)) and not isinstance(v, bool)}
        if numbers:
            return numbers
    return None


def _command(template: Sequence[str], key: str, substitutions: Mapping[str, str]) -> list[str]:
    try:
        return [arg.format_map(substitutions) for arg in template]
    except KeyError as err:
        raise ConfigError(f"diagnose.repair.{key} names {{{err.args[0]}}}, which is not one of: "
                          f"{', '.join(sorted(substitutions))}") from None
    except (ValueError, IndexError) as err:
        raise ConfigError(f"diagnose.repair.{key} has a malformed placeholder: {err}") from None


def _run(args: list[str], cwd: Path, env: Mapping[str, str], timeout: float) -> tuple[int | None, str, str]:
    """Run ``args`` in a session of its own, so a timeout kills what it spawned too and its pipes close."""
    try:
        proc = subprocess.Popen(args, cwd=cwd, env=dict(env), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, errors="replace", start_new_session=True)
    except OSError as err:
        raise ConfigError(f"the repair command could not start {args[0]}: {err.strerror or err}") from None
    with proc:
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            stdout, stderr = proc.communicate()
            return None, stdout, f"{stderr}\nrecall: timed out after {timeout:g} s; killed\n"
    return proc.returncode, stdout, stderr


@dataclass(frozen=True)
class Command:
    """What runs in a copy: ``args`` (``{name}`` placeholders), the ``diagnose.repair`` key it is configured
    under, and how its result is read from the copy and its stdout (by default, the last line of JSON)."""

    args: Sequence[str]
    key: str = "command"
    read: Callable[[Path, str], dict[str, float] | None] = lambda _copy, stdout: _metrics(stdout)


def validate_in_copy(
    project: Path,
    edit: Edit | None,
    config: RepairConfig,
    substitutions: Mapping[str, str],
    env: Mapping[str, str] | None = None,
    command: Command | None = None,
) -> Validation:
    """Apply ``edit`` (if any) to a temporary copy of ``project``, compile it and run ``command`` there
    (``diagnose.repair.command`` unless given).

    The copy comes first on PYTHONPATH so the command imports the edited code,
    not an installed or working-tree version of it. With no command the edit
    is only compiled: proposed, not proven.
    """
    if edit is not None:
        check_limits(edit, config)
    run = command or Command(config.command)
    args = _command(run.args, run.key, substitutions)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="recall-repair-") as tmp:
        copy = Path(tmp) / (project.resolve().name or "project")
        # Symlinks are copied as files so writing the edit can never write through one into the project.
        shutil.copytree(project, copy, ignore=shutil.ignore_patterns(*config.ignore), ignore_dangling_symlinks=True)
        if edit is not None:
            target = copy / edit.path
            if not target.is_file():
                raise RepairRefused(f"{edit.path} is not in the copy of {project} (missing, or left out by "
                                    "diagnose.repair.ignore)")
            if target.read_bytes() != edit.before.encode("utf-8"):
                raise RepairRefused(f"{edit.path} changed since the repair was proposed; propose it again")
            target.write_bytes(edit.after.encode("utf-8"))
            if target.suffix == ".py":
                try:
                    py_compile.compile(str(target), doraise=True)
                except py_compile.PyCompileError as err:
                    return Validation(edit, False, None, None, time.monotonic() - started, _tail(err.msg))
        if not args:
            return Validation(edit, True, None, None, time.monotonic() - started, "")
        base = dict(os.environ if env is None else env)
        inherited = base.get("PYTHONPATH")
        base["PYTHONPATH"] = f"{copy}{os.pathsep}{inherited}" if inherited else str(copy)
        returncode, stdout, stderr = _run(args, copy, base, config.timeout_seconds)
        measured = run.read(copy, stdout)
    return Validation(edit, True, returncode, measured, time.monotonic() - started, _tail(stdout + stderr))


def prove_smallest(
    project: Path,
    edits: Sequence[Edit],
    config: RepairConfig,
    substitutions: Mapping[str, str],
    accept: Callable[[dict[str, float]], bool],
    env: Mapping[str, str] | None = None,
) -> tuple[Validation | None, list[Validation]]:
    """The smallest edit whose retrained metrics ``accept`` takes, and every validation tried on the way.

    Edits are tried smallest first (source order breaks ties), so the repair
    proposed is the least a reviewer has to read. Edits outside the limits are
    skipped; only when every one is refused is the first refusal raised.
    """
    if not edits:
        raise RepairRefused("there is no edit to prove")
    ordered = [edit for _, edit in sorted(enumerate(edits), key=lambda pair: (pair[1].changed_lines, pair[0]))]
    refusals: list[RepairRefused] = []
    tried: list[Validation] = []
    for edit in ordered:
        try:
            check_limits(edit, config)
        except RepairRefused as refused:
            refusals.append(refused)
            continue
        validation = validate_in_copy(project, edit, config, substitutions, env)
        tried.append(validation)
        if validation.ok and validation.metrics is not None and accept(validation.metrics):  # ok: it has metrics
            return validation, tried
    if len(refusals) == len(ordered):
        raise refusals[0]
    return None, tried
