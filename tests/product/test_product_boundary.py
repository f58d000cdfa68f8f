"""The product stands alone: nothing under recall_dagster imports the demo, and its wheel holds only the product."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from recall_dagster.settings import REPO_ROOT

IMPORT_EVERYTHING = """
import importlib, pkgutil, sys
import recall_dagster
names = [m.name for m in pkgutil.walk_packages(recall_dagster.__path__, "recall_dagster.")]
for name in names:
    importlib.import_module(name)
leaked = sorted(m for m in sys.modules if m.split(".")[0] in ("seed", "ml_models"))
print(len(names), recall_dagster.__file__)
assert not leaked, leaked
"""


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}


def test_no_product_module_imports_the_demo_directly_or_through_another(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_EVERYTHING], cwd=tmp_path, env=_clean_env(), capture_output=True, text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    count, location = done.stdout.split()
    assert int(count) > 50 and Path(location).parent == REPO_ROOT / "recall_dagster"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(REPO_ROOT)],
        check=True, capture_output=True, timeout=300,
    )
    [built] = out.glob("recall_dagster-*.whl")
    return built


def test_the_wheel_holds_the_product_alone(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names}
    assert tops == {"recall_dagster", next(t for t in tops if t.endswith(".dist-info"))}
    assert "recall_dagster/recall.yaml" in names, "the shipped defaults travel with the package"
    assert "recall_dagster/py.typed" in names, "a team's type checker reads the package's annotations (PEP 561)"


def test_the_wheel_installs_into_a_fresh_virtualenv_and_runs(wheel: Path, tmp_path: Path) -> None:
    fresh = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(fresh)], check=True, timeout=120)
    python = fresh / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q", str(wheel)],
        check=True, capture_output=True, timeout=300,
    )
    # the dependencies come from this interpreter's site-packages; its editable finder for the checkout does not
    site = subprocess.run([str(python), "-c", "import site; print(site.getsitepackages()[0])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    Path(site, "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {**_clean_env(), "RECALL_HOME": str(tmp_path / "home")}
    helped = subprocess.run([str(fresh / "bin" / "recall"), "--help"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=300)
    assert helped.returncode == 0, helped.stderr[-3000:]
    assert "scan" in helped.stdout and "gate" in helped.stdout and "estate" not in helped.stdout
    probe = (
        "import importlib.util, recall_dagster, recall_dagster.defs as api, recall_dagster.definitions;"
        "print(recall_dagster.__file__);"
        "print(importlib.util.find_spec('seed') is None and importlib.util.find_spec('ml_models') is None);"
        "print(len(api.recall_definitions().resolve_asset_graph().get_all_asset_keys()))"
    )
    done = subprocess.run([str(python), "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    location, no_demo, assets = done.stdout.split()
    assert location.startswith(str(fresh)) and no_demo == "True" and int(assets) == 7
