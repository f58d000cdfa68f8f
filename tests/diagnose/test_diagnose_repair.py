"""Repairs: guarded divisions edited byte-exactly, the limits, and proof in a copy that leaves the project alone."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import sys
from pathlib import Path

import pandas as pd
import pytest

from recall_dagster.diagnose.config import RepairConfig
from recall_dagster.config.load import load
from recall_dagster.diagnose.repair import (
    Edit,
    RepairRefused,
    Validation,
    check_limits,
    guarded_division_edits,
    prove_smallest,
    validate_in_copy,
)
from recall_dagster.errors import EXIT_USAGE, ConfigError

# CRLF line ends, a comment, odd spacing and a non-ASCII string before a division on
# the same line: all must survive the edit byte for byte (AST columns are UTF-8 bytes).
TRANSFORMS = (
    '"""Ratios the model reads."""\r\n'
    "\r\n"
    "import pandas as pd\r\n"
    "\r\n"
    "\r\n"
    "def ratios(frame: pd.DataFrame) -> pd.DataFrame:\r\n"
    "    # points per visit; zero visits used to be impossible\r\n"
    '    label = "café";  per_visit = frame["points"]  /  frame["visits"]   # keep me\r\n'
    "    inverse = (1 / frame[\r\n"
    '        "visits"])\r\n'
    "    half = frame[\"points\"] / 2\r\n"
    '    return pd.DataFrame({"per_visit": per_visit, "inverse": inverse, "half": half, "label": label})\r\n'
    "\r\n"
    "\r\n"
    "def constant_only(x):\r\n"
    "    return x / 2\r\n"
    "\r\n"
    "\r\n"
    "def no_division(x):\r\n"
    "    return x * 2\r\n"
)

TRAIN = '''\
import json
import sys

import numpy as np
import pandas as pd

from pkg.transforms import ratios

frame = pd.DataFrame({"points": [3.0, 4.0, 5.0], "visits": [1.0, 0.0, 2.0]})
out = ratios(frame)
print("training", sys.argv[1:])
print(json.dumps({
    "per_visit_inf": int(np.isinf(out["per_visit"]).sum()),
    "inverse_inf": int(np.isinf(out["inverse"]).sum()),
    "model": sys.argv[-1],
}))
'''


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "transforms.py").write_bytes(TRANSFORMS.encode("utf-8"))
    (root / "train.py").write_text(TRAIN)
    (root / "tests").mkdir()
    (root / "tests" / "test_pkg.py").write_text("def test_nothing():\n    assert 1 / 1\n")
    return root


def _with(config: RepairConfig, **changes: object) -> RepairConfig:
    """``config`` with ``changes`` made, as a team's recall.yaml would make them."""
    return config.model_copy(update=changes)


@pytest.fixture
def shipped(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> RepairConfig:
    """The shipped ``diagnose.repair``, with no estate's recall.yaml laid over it."""
    monkeypatch.setenv("RECALL_HOME", str(tmp_path / "home"))
    return load().diagnose.repair


@pytest.fixture
def config(shipped: RepairConfig) -> RepairConfig:
    return _with(
        shipped,
        allowed=("pkg/*",),
        command=("{python}", "train.py", "--model", "{model}"),
        timeout_seconds=60,
    )


SUBSTITUTIONS = {"python": sys.executable, "model": "fraud_detector"}


def snapshot(root: Path) -> dict[str, str | None]:
    """Every path under ``root`` with its content's hash (None for a directory)."""
    return {
        p.relative_to(root).as_posix(): None if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
    }


def edit_of(path: str, before: str, after: str) -> Edit:
    return Edit(path=path, before=before, after=after, description="test edit")


# -- the edit -----------------------------------------------------------------------------------------------------


def test_one_edit_per_division_in_source_order_skipping_literals(project: Path) -> None:
    edits = guarded_division_edits(project, "pkg.transforms", "ratios")
    assert [e.description for e in edits] == [
        'guard the division `frame["points"] / frame["visits"]` at pkg/transforms.py:8 against a zero denominator',
        'guard the division `1 / frame[ "visits"]` at pkg/transforms.py:9 against a zero denominator',
    ]
    assert {e.path for e in edits} == {"pkg/transforms.py"}
    assert all(e.before == TRANSFORMS for e in edits)


def test_the_rewrite_is_byte_exact_but_for_the_guarded_denominator(project: Path) -> None:
    first, second = guarded_division_edits(project, "pkg.transforms", "ratios")
    assert first.after == TRANSFORMS.replace(
        'frame["points"]  /  frame["visits"]',
        'frame["points"]  /  (frame["visits"]).where((frame["visits"]) != 0)',
    )
    assert second.after == TRANSFORMS.replace(
        '(1 / frame[\r\n        "visits"])',
        '(1 / (frame[\r\n        "visits"]).where((frame[\r\n        "visits"]) != 0))',
    )
    assert first.changed_lines == 2
    assert second.changed_lines == 5  # two lines out, three in
    assert first.patch.startswith("--- a/pkg/transforms.py\n+++ b/pkg/transforms.py\n@@")
    assert '+    label = "café";  per_visit = frame["points"]  /  (frame["visits"]).where(' in first.patch


def test_the_guard_really_removes_the_infinity(project: Path) -> None:
    frame = pd.DataFrame({"points": [3.0, 4.0], "visits": [1.0, 0.0]})

    def run(source: str) -> pd.DataFrame:
        namespace: dict = {}
        exec(compile(source, "transforms.py", "exec"), namespace)
        return namespace["ratios"](frame)

    first, second = guarded_division_edits(project, "pkg.transforms", "ratios")
    assert math.isinf(run(TRANSFORMS)["per_visit"][1])
    guarded = run(first.after)
    assert math.isnan(guarded["per_visit"][1]) and guarded["per_visit"][0] == 3.0
    assert math.isinf(guarded["inverse"][1])  # the other division is another edit
    assert math.isnan(run(second.after)["inverse"][1])


def test_a_package_init_resolves_and_a_nested_division_gives_two_edits(project: Path) -> None:
    (project / "pkg" / "__init__.py").write_text("def chain(a, b, c):\n    return a / b / c\n")
    inner, outer = guarded_division_edits(project, "pkg", "chain")
    assert inner.path == "pkg/__init__.py"
    assert inner.after == "def chain(a, b, c):\n    return a / (b).where((b) != 0) / c\n"
    assert outer.after == "def chain(a, b, c):\n    return a / b / (c).where((c) != 0)\n"


def test_a_byte_order_mark_is_kept(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_bytes(b"\xef\xbb\xbfdef f(a, b): return a / b\n")
    (edit,) = guarded_division_edits(tmp_path, "m", "f")
    assert edit.after.encode("utf-8") == b"\xef\xbb\xbfdef f(a, b): return a / (b).where((b) != 0)\n"


@pytest.mark.parametrize(
    ("module", "function", "message"),
    [
        ("pkg.missing", "ratios", "module pkg.missing is not in"),
        ("pkg..transforms", "ratios", "is not a dotted module name"),
        ("pkg.transforms", "nope", "pkg/transforms.py has no top-level function `nope`"),
        ("pkg.transforms", "no_division", "`no_division` in pkg/transforms.py contains no division"),
        ("pkg.transforms", "constant_only", "divides only by number literals"),
        ("pkg.broken", "f", "pkg/broken.py does not parse: "),
    ],
)
def test_an_edit_that_cannot_be_made_is_refused(project: Path, module: str, function: str, message: str) -> None:
    (project / "pkg" / "broken.py").write_text("def f(:\n")
    with pytest.raises(RepairRefused, match=message.replace("(", r"\(").replace(".", r"\.")) as raised:
        guarded_division_edits(project, module, function)
    assert raised.value.exit_code == EXIT_USAGE


# -- the limits -------------------------------------------------------------------------------------------------


def test_the_shipped_empty_allowed_refuses_everything(shipped: RepairConfig) -> None:
    with pytest.raises(RepairRefused, match="diagnose.repair.allowed is empty, so every edit is refused"):
        check_limits(edit_of("pkg/a.py", "x\n", "y\n"), shipped)


def test_limits(config: RepairConfig) -> None:
    small = edit_of("pkg/a.py", "x\n", "y\n")
    check_limits(small, config)
    with pytest.raises(RepairRefused, match=r"lib/a\.py matches none of diagnose\.repair\.allowed \(pkg/\*\)"):
        check_limits(dataclasses.replace(small, path="lib/a.py"), config)
    with pytest.raises(RepairRefused, match=r"tests/a\.py is protected by diagnose\.repair\.protected \(tests/\*\)"):
        check_limits(dataclasses.replace(small, path="tests/a.py"), _with(config, allowed=("*",)))
    for escaping in ("../outside.py", "pkg/../../outside.py", "/etc/passwd"):
        with pytest.raises(RepairRefused, match="may only edit a file inside the project"):
            check_limits(dataclasses.replace(small, path=escaping), _with(config, allowed=("*",)))
    big = edit_of("pkg/a.py", "a\nb\nc\n", "A\nB\nC\n")
    assert big.changed_lines == 6
    with pytest.raises(RepairRefused, match=r"changes 6 lines, more than diagnose\.repair\.max_changed_lines \(4\)"):
        check_limits(big, config)


# -- proof in a copy --------------------------------------------------------------------------------------------


def test_the_edited_copy_is_what_runs_and_the_project_is_untouched(project: Path, config: RepairConfig) -> None:
    before = snapshot(project)
    first, second = guarded_division_edits(project, "pkg.transforms", "ratios")
    validation = validate_in_copy(project, first, config, SUBSTITUTIONS)
    assert validation.ok, validation.output
    assert validation.metrics == {"per_visit_inf": 0.0, "inverse_inf": 1.0}  # "model" is not a number: dropped
    assert "training ['--model', 'fraud_detector']" in validation.output
    assert json.loads(json.dumps(validation.to_json()))["ok"] is True
    assert snapshot(project) == before


def test_the_copy_leads_pythonpath(project: Path, config: RepairConfig, tmp_path: Path) -> None:
    """A runner outside the project finds the package only through PYTHONPATH, and the copy's edit wins."""
    runner = tmp_path / "runner.py"
    runner.write_text(
        "import json, sys, numpy as np, pandas as pd, from_env\n"
        "import pkg.transforms as t\n"
        "print('transforms from', t.__file__)\n"
        "out = t.ratios(pd.DataFrame({'points': [1.0], 'visits': [0.0]}))\n"
        "print(json.dumps({'per_visit_inf': int(np.isinf(out['per_visit']).sum()), 'env': from_env.VALUE}))\n"
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "from_env.py").write_text("VALUE = 7\n")
    before = snapshot(project)
    first, _ = guarded_division_edits(project, "pkg.transforms", "ratios")
    validation = validate_in_copy(
        project,
        first,
        _with(config, command=("{python}", "{runner}")),
        {**SUBSTITUTIONS, "runner": str(runner)},
        env={**os.environ, "PYTHONPATH": str(elsewhere)},
    )
    assert validation.ok, validation.output
    assert validation.metrics == {"per_visit_inf": 0.0, "env": 7.0}
    assert str(project) not in validation.output and "recall-repair-" in validation.output
    assert snapshot(project) == before


def test_a_failing_compile_is_not_run(project: Path, config: RepairConfig, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    before = snapshot(project)
    broken = edit_of("pkg/transforms.py", TRANSFORMS, TRANSFORMS + "def broken(:\n")
    validation = validate_in_copy(
        project,
        broken,
        _with(config, command=("{python}", "-c", "import pathlib, sys; pathlib.Path(sys.argv[1]).touch()",
                                             "{marker}")),
        {**SUBSTITUTIONS, "marker": str(marker)},
    )
    assert (validation.compiled, validation.returncode, validation.metrics) == (False, None, None)
    assert "SyntaxError" in validation.output or "invalid syntax" in validation.output
    assert not marker.exists()
    assert snapshot(project) == before


def test_no_command_proposes_without_proving(project: Path, config: RepairConfig) -> None:
    first, _ = guarded_division_edits(project, "pkg.transforms", "ratios")
    validation = validate_in_copy(project, first, _with(config, command=()), SUBSTITUTIONS)
    assert (validation.compiled, validation.returncode, validation.metrics, validation.ok) == (True, None, None, False)


def test_a_timeout_is_reported_with_the_output_so_far(project: Path, config: RepairConfig) -> None:
    before = snapshot(project)
    first, _ = guarded_division_edits(project, "pkg.transforms", "ratios")
    slow = _with(
        config, timeout_seconds=1,
        command=("{python}", "-c", "import time; print('started', flush=True); time.sleep(30)"),
    )
    validation = validate_in_copy(project, first, slow, SUBSTITUTIONS)
    assert validation.compiled and validation.returncode is None and not validation.ok
    assert "started" in validation.output and "timed out after 1 s" in validation.output
    assert validation.seconds < 15
    assert snapshot(project) == before


def test_a_failing_command_is_not_ok(project: Path, config: RepairConfig) -> None:
    first, _ = guarded_division_edits(project, "pkg.transforms", "ratios")
    failing = _with(config, command=("{python}", "-c", "print('{{\"x\": 1}}'); raise SystemExit(3)"))
    validation = validate_in_copy(project, first, failing, SUBSTITUTIONS)
    assert (validation.returncode, validation.metrics, validation.ok) == (3, {"x": 1.0}, False)


def test_a_stale_edit_or_unknown_placeholder_is_refused(project: Path, config: RepairConfig) -> None:
    first, _ = guarded_division_edits(project, "pkg.transforms", "ratios")
    (project / "pkg" / "transforms.py").write_bytes(TRANSFORMS.replace("zero visits", "no visits").encode())
    with pytest.raises(RepairRefused, match=r"pkg/transforms\.py changed since the repair was proposed"):
        validate_in_copy(project, first, config, SUBSTITUTIONS)
    with pytest.raises(ConfigError, match=r"names \{model\}, which is not one of: python"):
        validate_in_copy(project, first, config, {"python": sys.executable})
    with pytest.raises(RepairRefused, match="outside.py matches none"):
        validate_in_copy(project, edit_of("outside.py", "", "x = 1\n"), config, SUBSTITUTIONS)


# -- the smallest proven repair ---------------------------------------------------------------------------------


def test_prove_smallest_tries_small_edits_first_and_stops_at_the_first_accepted(
    project: Path, config: RepairConfig
) -> None:
    before = snapshot(project)
    first, second = guarded_division_edits(project, "pkg.transforms", "ratios")
    roomy = _with(config, max_changed_lines=10)
    # Given biggest first: the 2-line edit is still tried first, proven, and rejected by `accept`.
    chosen, tried = prove_smallest(project, [second, first], roomy, SUBSTITUTIONS, lambda m: m["inverse_inf"] == 0)
    assert [v.edit for v in tried] == [first, second]
    assert all(isinstance(v, Validation) and v.ok for v in tried)
    assert chosen is tried[1] and chosen.metrics == {"per_visit_inf": 1.0, "inverse_inf": 0.0}

    chosen, tried = prove_smallest(project, [first, second], roomy, SUBSTITUTIONS, lambda m: m["per_visit_inf"] == 0)
    assert chosen is not None and chosen.edit == first and len(tried) == 1

    # The 5-line edit is refused by the shipped max_changed_lines and skipped, not raised.
    chosen, tried = prove_smallest(project, [second, first], config, SUBSTITUTIONS, lambda m: False)
    assert chosen is None and [v.edit for v in tried] == [first]
    assert snapshot(project) == before


def test_prove_smallest_raises_the_first_refusal_only_when_all_are_refused(
    project: Path, config: RepairConfig
) -> None:
    first, second = guarded_division_edits(project, "pkg.transforms", "ratios")
    refused = dataclasses.replace(first, path="tests/test_pkg.py")
    with pytest.raises(RepairRefused, match=r"tests/test_pkg\.py is protected"):
        prove_smallest(project, [second, refused], config, SUBSTITUTIONS, lambda m: True)
    with pytest.raises(RepairRefused, match="there is no edit to prove"):
        prove_smallest(project, [], config, SUBSTITUTIONS, lambda m: True)
