"""The rollback on the demo estate built by the real systems: after ``seed break``, fraud_detector's production alias
goes back to the version the blind window clears, and the rescan finds what production serves clean."""

from __future__ import annotations

import json
from typing import Iterator

import pytest
from click.testing import CliRunner

from recall_dagster.cli import cli
from recall_dagster.progress import Progress
from recall_dagster.mlflow_registry import read_registry
from recall_dagster.graph import ALIAS_READ_LIMITS
from recall_dagster.settings import Settings
from seed import lifecycle
from tests.conftest import point_recall_at

pytestmark = [pytest.mark.stack, pytest.mark.slow]


@pytest.fixture(scope="module")
def broken(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    home = tmp_path_factory.mktemp("rollback-estate")
    settings = Settings.from_env(home=home, graph=str(home / "datahub.db"))
    lifecycle.build(settings, Progress(quiet=True), scale=0.05)
    lifecycle.break_estate(settings, Progress(quiet=True))
    yield settings
    lifecycle.reset(settings, Progress(quiet=True))


def recall(*args: str) -> tuple[int, dict]:
    done = CliRunner().invoke(cli, [*args, "--json"], env={"RECALL_USER": "oncall"})
    assert done.exit_code in (0, 1), done.output
    return done.exit_code, json.loads(done.stdout)


def production_of(settings: Settings, model: str) -> str:
    held = read_registry(settings.mlflow_uri, ALIAS_READ_LIMITS)
    assert held is not None
    return next(v for (name, v), aliases in held.aliases.items() if name == model and "production" in aliases)


def test_after_break_the_rollback_moves_fraud_detector_to_the_safe_version_and_the_rescan_finds_it_clean(
    broken: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    point_recall_at(broken, monkeypatch)
    assert production_of(broken, "fraud_detector") == "2", "break retrains fraud_detector inside the bad load"
    _, window = recall("blind-window")
    fraud = next(m for c in window["causes"] for m in c["models"] if m["name"] == "fraud_detector")
    safe = fraud["rollback"]["version"]
    assert safe == "1"

    _, planned = recall("rollback", "fraud_detector", "--to", safe)
    assert planned["applied"] is False and production_of(broken, "fraud_detector") == "2"

    _, done = recall("rollback", "fraud_detector", "--to", safe, "--apply", "--reason", "v2 learnt from NULL prices")
    assert production_of(broken, "fraud_detector") == "1"
    served = done["after"]["served"]["production"]
    assert done["after"]["clean"] and (served["name"], served["verdict"]) == ("fraud_detector_1", "CLEAN")
    assert "fraud_detector_1" in [m["name"] for m in done["after"]["scan"]]
    assert done["after"]["contaminated_live"] == ["fraud_detector_2"], (
        "the EU endpoint still serves v2: the rollback says so rather than pretend it moved a deployment")

    code, gate = recall("gate", "fraud_detector")
    assert gate["name"] == "fraud_detector_1", "the gate judges what production serves now"
    assert "contaminated_version" not in gate["failing_checks"]

    _, again = recall("rollback", "fraud_detector", "--to", safe, "--apply")
    assert again["plan"]["done"] and again["writes"] == 0 and again["record"] == done["record"]
