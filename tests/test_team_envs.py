"""The team environments CI installs Recall into (scripts/team_envs.py): what counts as changing a team's
stack, and that the locks sit at the ends of the ranges pyproject.toml declares."""

from __future__ import annotations

import tomllib

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from recall_dagster.settings import REPO_ROOT
from scripts.team_envs import changed, team_envs, EnvFailure

PROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _pins(lock_text: str) -> dict[str, str]:
    pins = {}
    for line in lock_text.splitlines():
        name, sep, version = line.split("#", 1)[0].strip().partition("==")
        if sep:
            pins[name.lower().replace("_", "-")] = version
    return pins


def test_a_changed_or_removed_package_is_named_and_an_added_one_is_not() -> None:
    before = {"mlflow": "3.17.2", "pandas": "3.1.1", "dbt-core": "1.11.16"}
    after = {"mlflow": "2.20.4", "pandas": "3.1.1", "acryl-datahub": "1.7.0.17"}
    assert changed(before, after) == ["dbt-core 1.11.16 -> removed", "mlflow 3.17.2 -> 2.20.4"]
    assert changed(before, {**before, "acryl-datahub": "1.7.0.17"}) == []


def test_an_unknown_environment_is_refused_by_name() -> None:
    with pytest.raises(EnvFailure, match="no such environment: team-py2"):
        team_envs(["team-py2"])


@pytest.mark.parametrize("env", team_envs([]), ids=lambda env: env.name)
def test_each_lock_is_a_team_stack_recall_admits(env) -> None:  # noqa: ANN001 - a TeamEnv
    """Its Python is one requires-python admits, and every core requirement it pins is inside Recall's range:
    a range narrowed past what a lock holds fails here before CI installs anything."""
    minor = env.name.rpartition("-py")[2]
    assert SpecifierSet(PROJECT["requires-python"]).contains(f"{minor}.0")
    pins = _pins(env.lock.read_text(encoding="utf-8"))
    for requirement in map(Requirement, PROJECT["dependencies"]):
        name = requirement.name.lower()
        if name in pins:
            assert requirement.specifier.contains(pins[name], prereleases=True), (env.name, name, pins[name])


def test_the_locks_reach_both_ends_of_the_ranges() -> None:
    """The oldest lock holds the lowest minor of Dagster, MLflow, pandas and SQLAlchemy the ranges allow, the
    newest ones MLflow 3, pandas 3 and SQLAlchemy 2.1, and Python runs from 3.11 to 3.13."""
    locks = {env.name: _pins(env.lock.read_text(encoding="utf-8")) for env in team_envs([])}
    oldest, newest = locks["team-oldest-py3.11"], locks["team-newest-py3.13"]
    assert [oldest[name].split(".")[:2] for name in ("dagster", "mlflow", "pandas", "sqlalchemy")] == [
        ["1", "13"], ["2", "20"], ["2", "0"], ["2", "0"]]
    assert [newest[name].split(".")[0] for name in ("mlflow", "pandas")] == ["3", "3"]
    assert newest["sqlalchemy"].startswith("2.1.")
    assert {name.rpartition("-py")[2] for name in locks} == {"3.11", "3.12", "3.13"}
