"""A dbt test moved upstream of the one that failed, edited into the team's YAML and run in a copy.

A test on a mart runs after the mart is rebuilt, so by the time it fails the
model's training table already holds the bad rows.  The same test on the
column the mart is built from fails before ``dbt build`` rebuilds the mart,
which then skips it: the bad load never reaches training.  The edit is made
at the exact place the column is declared (found through the YAML's own node
positions), so the patch shows one added test and nothing reformatted.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from recall_dagster.diagnose.repair import Edit, RepairRefused
from recall_dagster.estate.dbt import DbtNode

TEST_KEYS = ("data_tests", "tests")  # dbt 1.8+ spells it data_tests; the older key still works
_SKIPPED_DIRS = {"target", "dbt_packages", "logs", ".venv", "node_modules"}
PASSING, FAILING = ("pass",), ("fail", "warn")


def generic_test_name(item: Any) -> str | None:
    """A test entry's generic test name: ``not_null`` or ``{between: {...}}``."""
    if isinstance(item, str):
        return item
    if isinstance(item, dict) and len(item) == 1:
        return str(next(iter(item)))
    return None


def _get(mapping: MappingNode, key: str) -> Node | None:
    return next((v for k, v in mapping.value if isinstance(k, ScalarNode) and k.value == key), None)


def _named(sequence: Node | None, name: str) -> MappingNode | None:
    if not isinstance(sequence, SequenceNode):
        return None
    for item in sequence.value:
        if isinstance(item, MappingNode):
            found = _get(item, "name")
            if isinstance(found, ScalarNode) and found.value == name:
                return item
    return None


def _resource(root: Node, node: DbtNode) -> MappingNode | None:
    """The mapping that declares ``node`` in a properties file, if this file declares it."""
    if not isinstance(root, MappingNode):
        return None
    if node.kind == "model":
        return _named(_get(root, "models"), node.path[0])
    source = _named(_get(root, "sources"), node.path[0])
    return _named(_get(source, "tables"), node.path[1]) if source is not None else None


def _compose(text: str, where: str) -> Node | None:
    try:
        return yaml.compose(text)
    except yaml.YAMLError as err:
        raise RepairRefused(f"{where} is not valid YAML: {err}") from None


def properties_file(dbt_dir: Path, node: DbtNode) -> tuple[Path, str]:
    """The YAML file (and its text) that declares ``node``, searched in file order under ``dbt_dir``."""
    candidates = sorted(
        p for pattern in ("*.yml", "*.yaml") for p in dbt_dir.rglob(pattern)
        if not _SKIPPED_DIRS & set(p.relative_to(dbt_dir).parts[:-1])
    )
    for path in candidates:
        text = path.read_text(encoding="utf-8")
        if node.kind == "model" and "models" not in text or node.kind == "source" and "sources" not in text:
            continue
        if _resource(_compose(text, str(path)), node) is not None:
            return path, text
    raise RepairRefused(f"no YAML file under {dbt_dir} declares {node.unique_id}")


def column_tests(text: str, node: DbtNode, column: str) -> list[Any]:
    """The tests declared on ``column`` of ``node`` in a properties file's text."""
    document = yaml.safe_load(text) or {}
    if node.kind == "model":
        owners = [m for m in document.get("models") or [] if isinstance(m, dict) and m.get("name") == node.path[0]]
    else:
        sources = [s for s in document.get("sources") or [] if isinstance(s, dict) and s.get("name") == node.path[0]]
        owners = [t for s in sources for t in s.get("tables") or [] if isinstance(t, dict) and t.get("name") == node.path[1]]
    for owner in owners:
        for entry in owner.get("columns") or []:
            if isinstance(entry, dict) and entry.get("name") == column:
                return [t for key in TEST_KEYS for t in entry.get(key) or []]
    return []


def _flow(item: Any) -> str:
    return item if isinstance(item, str) else yaml.safe_dump(
        item, default_flow_style=True, sort_keys=False, width=10**6
    ).strip()


def _after(text: str, node: Node) -> int:
    """Where a line inserted after ``node`` goes: the end of the last line holding any of it."""
    end = node.end_mark.index
    while end > 0 and text[end - 1] in " \t\r\n":  # a block node ends where the next token starts
        end -= 1
    newline = text.find("\n", end)
    return len(text) if newline < 0 else newline


def _indent_of(node: Node) -> int:
    return node.start_mark.column


def add_test(text: str, node: DbtNode, column: str, item: Any, where: str) -> str:
    """``text`` with ``item`` added to the tests of ``column`` of ``node``, and nothing else changed."""
    root = _compose(text, where)
    resource = _resource(root, node) if root is not None else None
    if resource is None:
        raise RepairRefused(f"{where} does not declare {node.unique_id}")
    flow = _flow(item)
    columns = _get(resource, "columns")
    entry = _named(columns, column)
    if entry is None:
        if not isinstance(columns, SequenceNode) or not columns.value:
            raise RepairRefused(f"{where} declares no columns for {node.unique_id}; add {column} there by hand")
        dash = " " * (_indent_of(columns.value[-1]) - 2)
        at = _after(text, columns.value[-1])
        body = " " * _indent_of(columns.value[-1])
        return text[:at] + f"\n{dash}- name: {column}\n{body}data_tests: [{flow}]" + text[at:]
    tests = next((v for key in TEST_KEYS if (v := _get(entry, key)) is not None), None)
    if isinstance(tests, SequenceNode) and tests.flow_style:
        close = text.rindex("]", 0, tests.end_mark.index)
        return text[:close] + (", " if tests.value else "") + flow + text[close:]
    if isinstance(tests, SequenceNode) and tests.value:
        last = tests.value[-1]
        at = _after(text, last)
        return text[:at] + f"\n{' ' * (_indent_of(last) - 2)}- {flow}" + text[at:]
    if tests is not None:
        raise RepairRefused(f"{where}: the tests of {column} are not a list; add the {generic_test_name(item)} test by hand")
    at = _after(text, entry.value[-1][1])
    return text[:at] + f"\n{' ' * _indent_of(entry.value[0][0])}data_tests: [{flow}]" + text[at:]


def _declared_as(node_name: str, items: list[Any]) -> Any | None:
    """The declared test a dbt test node is an instance of: dbt names a generic test's node
    ``<test>_<model>_<column>[__<args>]`` (``source_<test>_...`` on a source), so the longest generic
    name the node's name starts with."""
    matches = [
        t for t in items
        if (g := generic_test_name(t)) and (node_name == g or node_name.startswith((f"{g}_", f"source_{g}_")))
    ]
    return max(matches, key=lambda t: len(generic_test_name(t) or ""), default=None)


def upstream_test_edit(
    project: Path, dbt_project: str, failing: DbtNode, failing_column: str, node_name: str, target: DbtNode,
    column: str,
) -> tuple[Edit, str]:
    """Copy the test declared on ``failing``'s column that ``node_name`` (the failing dbt test node, as DataHub
    names its assertion) instantiates onto ``target``'s ``column``, as one edit; with the generic test's name."""
    dbt_dir = project / dbt_project
    if not dbt_dir.is_dir():
        raise RepairRefused(f"diagnose.repair.dbt.project {dbt_project!r} is not a directory in {project}")
    source_path, source_text = properties_file(dbt_dir, failing)
    item = _declared_as(node_name, column_tests(source_text, failing, failing_column))
    if item is None:
        raise RepairRefused(f"{source_path.relative_to(project).as_posix()} declares no test on "
                            f"{failing.path[-1]}.{failing_column} that {node_name} is an instance of")
    name = str(generic_test_name(item))
    path, text = properties_file(dbt_dir, target)
    rel = path.relative_to(project).as_posix()
    if any(generic_test_name(t) == name for t in column_tests(text, target, column)):
        raise RepairRefused(f"{rel} already declares a {name} test on {target.path[-1]}.{column}")
    after = add_test(text, target, column, item, rel)
    if not any(generic_test_name(t) == name for t in column_tests(after, target, column)):
        raise RepairRefused(f"{rel}: the {name} test could not be added to {column}")
    return Edit(rel, text, after, f"add the {name} test that failed on {failing.path[-1]}.{failing_column} to "
                                  f"{target.path[-1]}.{column}, upstream, in {rel}"), name


def dbt_test_outcome(dbt_dir: Path, target: DbtNode, column: str, name: str) -> dict[str, float] | None:
    """How the ``name`` tests on ``target``'s ``column`` ended in the run whose artifacts ``dbt_dir/target``
    holds: counts by status, and the failing rows; None when no such test ran."""
    try:
        manifest = json.loads((dbt_dir / "target" / "manifest.json").read_text())
        results = json.loads((dbt_dir / "target" / "run_results.json").read_text())
    except (OSError, ValueError):
        return None
    wanted = {
        uid for uid, n in (manifest.get("nodes") or {}).items()
        if n.get("resource_type") == "test" and n.get("column_name") == column
        and (n.get("test_metadata") or {}).get("name") == name
        and target.unique_id in ((n.get("depends_on") or {}).get("nodes") or [])
    }
    ran = [r for r in results.get("results") or [] if r.get("unique_id") in wanted]
    if not ran:
        return None
    counts: dict[str, float] = {"pass": 0.0, "fail": 0.0, "error": 0.0, "failing_rows": 0.0}
    for r in ran:
        status = str(r.get("status"))
        bucket = "pass" if status in PASSING else "fail" if status in FAILING else "error"
        counts[bucket] += 1
        counts["failing_rows"] += float(r.get("failures") or 0)
    return counts
