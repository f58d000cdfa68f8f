"""Recall leans on a few Dagster internals (recall_dagster/defs/_compat.py, each with its reason). They were
verified on one Dagster version: an upgrade must fail here, loudly, until they are verified again."""

from __future__ import annotations


import dagster

from recall_dagster.defs import _compat
from recall_dagster.settings import REPO_ROOT
from tests.syntax_trees import PACKAGE, imported_modules, package_trees


def test_the_installed_dagster_is_the_one_the_internals_were_verified_with() -> None:
    """Every Dagster CI installs (the demo's lock and each team environment) is a release the internals were
    verified with, and so is the one running this test: a new lock or a moved range fails here first."""
    locks = [REPO_ROOT / "constraints.txt", *sorted((REPO_ROOT / "envs").glob("team-*.txt"))]
    pinned = {lock.name: next(line.split("==")[1].strip() for line in lock.read_text().splitlines()
                              if line.startswith("dagster==")) for lock in locks}
    unverified = {name: version for name, version in pinned.items() if version not in _compat.VERIFIED_WITH}
    assert unverified == {} and dagster.__version__ in _compat.VERIFIED_WITH, (
        f"Dagster {dagster.__version__} is installed and the locks pin {pinned}; recall_dagster/defs/_compat.py was "
        f"verified with {_compat.VERIFIED_WITH}: re-verify each use there, then move VERIFIED_WITH with the locks")
    assert set(pinned.values()) == set(_compat.VERIFIED_WITH), "each verified release is one CI runs"


def test_no_module_but_compat_imports_dagster_internals() -> None:
    offenders = sorted(str(path.relative_to(PACKAGE.parent)) for path, tree in package_trees().items()
                       if path.name != "_compat.py" and any(name.startswith(("dagster._", "dagster_shared"))
                                                            for name in imported_modules(tree)))
    assert offenders == [], "Dagster internals belong in recall_dagster/defs/_compat.py, each with its reason"
