"""Every entry point runs the scan's stages through its one pipeline (:mod:`recall_dagster.scan`): none
imports a stage's implementation to assemble a scan of its own, so a new stage is one edit and no two entry
points can order them differently (the agreement this gives: tests/foreign/test_foreign_pipeline_agreement.py)."""

from __future__ import annotations

from syntax_trees import PACKAGE, imported_modules, package_trees

PIPELINE = "recall_dagster.scan"
# each stage's implementation: read, detect (the first pass), measure, spread (the blast radius), score
STAGES = {
    "recall_dagster.kept.incremental": {"resolve_incremental"},
    "recall_dagster.detect.catalogue": {"first_pass", "judge", "second_pass"},
    "recall_dagster.impact.measured": {"measure_findings", "finding_measure"},
    "recall_dagster.results": {"score_models"},
    PIPELINE: {"scan_closures", "find_and_record", "find_again", "finish_detection", "kept_lists", "left_out"},
}


def _module(path) -> str:  # noqa: ANN001 - a Path under the package
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_no_entry_point_assembles_the_scan_from_its_stages() -> None:
    stages = {f"{module}.{name}" for module, names in STAGES.items() for name in names}
    assembling = {
        module: sorted(imported_modules(tree) & stages)
        for path, tree in package_trees().items()
        if (module := _module(path)) != PIPELINE and module not in STAGES
    }
    assert {m: s for m, s in assembling.items() if s} == {}, "call the stages through recall_dagster.scan.Pipeline"


def test_the_stage_list_names_what_exists() -> None:
    """A renamed stage would otherwise leave the test above guarding nothing."""
    import importlib

    for module, names in STAGES.items():
        assert all(callable(getattr(importlib.import_module(module), n, None)) for n in names), module


def test_a_home_s_pipeline_is_built_in_one_place() -> None:
    """``recall scan``, the Dagster resource, the MCP server, a model's verdict check and rollback all scan the
    home RECALL_HOME names: its stores and its replay are chosen by ``home_scan.home_pipeline`` alone, so none
    of them can record or measure a scan of that home differently."""
    import ast

    building = sorted(
        module for path, tree in package_trees().items()
        if (module := _module(path)) not in {PIPELINE, "recall_dagster.home_scan"}
        and any(isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None))
                in {"Pipeline", "run_scan"} for node in ast.walk(tree))
    )
    assert building == [], "build a home's pipeline with recall_dagster.home_scan.home_pipeline"
