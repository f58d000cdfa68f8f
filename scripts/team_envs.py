"""Install Recall's wheel into team environments made without it, and fail if that changes what the team had.

Why: Recall is a library a team adds to its own Dagster project. Its requirements are ranges (pyproject.toml);
this is where both ends of them are proven. Each environment in ``envs/`` is a team's stack locked before
Recall comes in (``team-newest-py3.12.txt``: today's Dagster, dbt 1.11, MLflow 3 and pandas 3;
``team-oldest-py3.11.txt``: the oldest releases the docs claim). For each one this script

1. creates the environment from its lock alone and records every package's version;
2. installs the wheel built from this checkout with plain ``pip install`` (what a team types);
3. fails if any package the team had changed version or went away, naming each;
4. checks what a team does first: ``recall --help``, and a team ``Definitions`` that merges
   ``recall_definitions`` with a ``retrain_gate`` validates;
5. with ``--tests``, installs the test tools and runs the fast suite there, but for the tests that need what
   a team's stack does not hold (``LEFT_OUT``), then the adoption walkthrough (``tests/adoption``).

Run by ``make test-envs`` (CI runs it): ``python3.12 scripts/team_envs.py [--tests] [NAME ...]``.
Environments live under ``.team-envs/`` and are made anew each run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

ROOT = Path(__file__).resolve().parent.parent
ENVS = ROOT / "envs"
WORK = ROOT / ".team-envs"
# What the library's tests need beyond the team's stack and Recall (the test tools, and the extras they use).
TEST_TOOLS = ("pytest", "pytest-xdist", "hypothesis", "jsonschema")
TEST_EXTRAS = "mcp,impact,duckdb"
# The tests a team environment leaves out, each for what it needs that a team's stack does not hold: the demo's
# stack (``seed``, ``ml_models``: embedded Postgres, Feast), DataHub's ingestion sources (they run in an
# environment of their own, docs/install.md), or the project's own dev tools (mkdocs, import-linter). A team that
# trains through dagster-mlflow is the oldest environment (dagster-mlflow pins pandas below 3): the test skips where
# dagster-mlflow is not installed.
LEFT_OUT = (
    "tests/dagster", "tests/stack", "tests/*/*_stack.py",  # the demo estate built on the embedded stack
    "tests/ml/test_ml_train.py", "tests/ml/test_ml_feature_store.py", "tests/ml/test_ml_historical.py",
    "tests/ml/test_ml_datahub_mlflow.py",  # DataHub's mlflow source
    "tests/test_docs.py", "tests/test_layers.py", "tests/test_types.py",
    "tests/product/test_product_boundary.py",  # dev tools: mkdocs, import-linter, mypy, the wheel's build
)

# A team's Dagster project that adopts Recall as docs/estate.md says: its own assets, Recall's definitions,
# and the retrain gate in front of its training asset. `Definitions.validate_loadable` is what
# `dagster definitions validate` runs.
TEAM_DEFINITIONS = """
import dagster as dg
from recall_dagster.defs import recall_definitions, retrain_gate

@dg.asset
def training_table() -> None: ...

@dg.asset(deps=[training_table])
def churn_model() -> None: ...

team = dg.Definitions(assets=[training_table])
gate = dg.Definitions(assets=retrain_gate(churn_model, "churn_model"))
merged = dg.Definitions.merge(team, recall_definitions(), gate)
dg.Definitions.validate_loadable(merged)
print("definitions valid:", len(list(merged.assets or [])), "assets")
"""


@dataclass(frozen=True)
class TeamEnv:
    """A locked team environment: ``envs/team-<kind>-py<X.Y>.txt``."""

    lock: Path

    @property
    def name(self) -> str:
        return self.lock.stem

    @property
    def python(self) -> str:
        """The interpreter the lock was made for: pyenv's build of that minor where pyenv has one (its shim
        answers only for the version pyenv has selected), else the one on PATH."""
        minor = self.lock.stem.rpartition("-py")[2]
        root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
        builds = sorted(root.glob(f"versions/{minor}.*/bin/python{minor}"))
        return str(builds[-1]) if builds else f"python{minor}"

    @property
    def path(self) -> Path:
        return WORK / self.name


class EnvFailure(Exception):
    """A team environment did not take Recall as promised."""


def team_envs(names: Sequence[str]) -> list[TeamEnv]:
    """The locked environments, all of them or those named."""
    found = [TeamEnv(lock) for lock in sorted(ENVS.glob("team-*-py*.txt"))]
    unknown = set(names) - {env.name for env in found}
    if unknown:
        raise EnvFailure(f"no such environment: {', '.join(sorted(unknown))} (see {ENVS})")
    return [env for env in found if not names or env.name in names]


def changed(before: Mapping[str, str], after: Mapping[str, str]) -> list[str]:
    """Every package the team had whose version changed or that is gone, as ``name old -> new``."""
    return [f"{name} {version} -> {after.get(name, 'removed')}"
            for name, version in sorted(before.items()) if after.get(name) != version]


def _run(command: Sequence[str], **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run(list(command), text=True, **kwargs)
    if done.returncode != 0:
        raise EnvFailure(f"`{' '.join(map(str, command[:6]))} ...` exited {done.returncode}")
    return done


def _versions(python: Path) -> dict[str, str]:
    listed = _run([str(python), "-m", "pip", "list", "--format=json"], capture_output=True).stdout
    return {row["name"].lower().replace("_", "-"): row["version"] for row in json.loads(listed)}


def build_wheel() -> Path:
    """The wheel a team would install, built from this checkout."""
    dist = WORK / "dist"
    shutil.rmtree(dist, ignore_errors=True)
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dist), str(ROOT)])
    (wheel,) = dist.glob("recall_dagster-*.whl")
    return wheel


def check(env: TeamEnv, wheel: Path, tests: bool) -> None:
    """One environment, steps 1 to 5 of the module's docstring."""
    shutil.rmtree(env.path, ignore_errors=True)
    _run([env.python, "-m", "venv", str(env.path)])
    python = env.path / "bin" / "python"
    _run([str(python), "-m", "pip", "install", "-qq", "--upgrade", "pip"])
    _run([str(python), "-m", "pip", "install", "-qq", "-r", str(env.lock)])
    before = _versions(python)
    _run([str(python), "-m", "pip", "install", "-qq", str(wheel)])
    after = _versions(python)
    moved = changed(before, after)
    if moved:
        raise EnvFailure("installing Recall changed the team's packages: " + "; ".join(moved))
    added = sorted(set(after) - set(before))
    print(f"{env.name}: Recall changed none of {len(before)} packages; added {len(added)}: {', '.join(added)}")
    _run([str(env.path / "bin" / "recall"), "--help"], capture_output=True)
    print(_run([str(python), "-c", TEAM_DEFINITIONS], capture_output=True, cwd=WORK).stdout.strip())
    if tests:
        _run([str(python), "-m", "pip", "install", "-qq", f"{wheel}[{TEST_EXTRAS}]", *TEST_TOOLS])
        _run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "auto", "--dist", "loadfile",
              "--basetemp", str(WORK / f"{env.name}-tmp"), "-m", "not slow",
              *(f"--ignore-glob={pattern}" for pattern in LEFT_OUT)], cwd=ROOT)
        # The adoption walkthroughs (docs/estate.md) as a team on this stack follows them: DataHub's sources run
        # through `recall ingest`, in an environment of their own; dbt by hand and dbt inside Dagster side by side.
        _run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadfile",
              "--basetemp", str(WORK / f"{env.name}-adoption"), "tests/adoption"], cwd=ROOT)


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="environments to check (default: every lock in envs/)")
    parser.add_argument("--tests", action="store_true", help="also run the library's tests in each environment")
    args = parser.parse_args(argv)
    try:
        envs = team_envs(args.names)
        WORK.mkdir(exist_ok=True)
        wheel = build_wheel()
        for env in envs:
            started = time.monotonic()
            check(env, wheel, args.tests)
            print(f"{env.name}: passed in {time.monotonic() - started:.0f} s")
    except EnvFailure as err:
        print(f"team_envs: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
