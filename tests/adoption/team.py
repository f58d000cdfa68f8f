"""A team's checkout in the shape of Dagster's own dbt example, and the commands its people type: the adoption
tests' shared estate (docs/estate.md's walkthroughs, run as written)."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest
from mlflow import MlflowClient

from tests.cutting import mlflow_server

PROJECT = Path(__file__).parent / "project"
BIN = Path(sys.executable).parent
WALKTHROUGH = Path(__file__).parents[2] / "docs" / "estate.md"
BY_HAND, IN_DAGSTER = "<!-- walkthrough:", "<!-- walkthrough-dagster:"


def walkthrough(mark: str = BY_HAND) -> list[str]:
    """A documented walkthrough block, its lines as a person pastes them (comments are not commands)."""
    text = WALKTHROUGH.read_text(encoding="utf-8")
    assert mark in text, f"docs/estate.md keeps its walkthrough {mark}"
    block = text.split(mark, 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip() and not line.lstrip().startswith("#")]


class Team:
    """The team's checkout in a scratch folder, and the commands its people type."""

    def __init__(self, root: Path, tracking_uri: str) -> None:
        self.root = root
        self.repo = root / "jaffle_shop"
        shutil.copytree(PROJECT, self.repo, ignore=shutil.ignore_patterns("target", "logs", "__pycache__"))
        self.dbt = self.repo / "jaffle"
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("RECALL_", "MLFLOW_"))},
            "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            "JAFFLE_DUCKDB": str(root / "jaffle.duckdb"),
            "MLFLOW_TRACKING_URI": tracking_uri,
            "DAGSTER_HOME": str(root / "dagster_home"),
            "DATAHUB_TELEMETRY_ENABLED": "false",
            "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
        }
        (root / "dagster_home").mkdir()
        (root / "dagster_home" / "dagster.yaml").write_text("")

    def sh(self, command: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(command, shell=True, cwd=cwd or self.root, env=self.env, capture_output=True,
                              text=True, timeout=900)

    def must(self, command: str, cwd: Path | None = None) -> str:
        done = self.sh(command, cwd)
        assert done.returncode == 0, f"{command}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        return done.stdout

    def recall(self, *args: str) -> tuple[int, Any]:
        done = self.sh(" ".join(["recall", *args, "--json"]), cwd=self.repo)
        assert done.stdout.startswith("{"), f"recall {' '.join(args)}: {done.stdout[-2000:]}{done.stderr[-2000:]}"
        return done.returncode, json.loads(done.stdout)

    def follow_walkthrough(self, mark: str) -> None:
        """The documented walkthrough, run line by line in one shell: each line must succeed, as written."""
        script = "set -e\n" + "".join(f"echo '+ {n}'\n{line}\n" for n, line in enumerate(walkthrough(mark)))
        done = subprocess.run(["bash", "-c", script], cwd=self.root, env=self.env, capture_output=True, text=True,
                              timeout=1800)
        ran = [line for line in done.stdout.splitlines() if line.startswith("+ ")]
        assert done.returncode == 0, f"walkthrough line {ran[-1] if ran else '?'} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        self.env.update(RECALL_GRAPH=str(self.repo / "datahub.db"), RECALL_HOME=str(self.repo / ".recall"),
                        RECALL_CONFIG=str(self.repo / "recall.yaml"))

    def materialize(self, selection: str, tags: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        """What the team does in Dagster: materialize assets (the training alone, say), as the UI's button does."""
        script = (
            "import json, sys\nfrom dagster import AssetSelection, DagsterInstance\n"
            "from jaffle_dagster.definitions import defs\n"
            "job = defs.resolve_implicit_global_asset_job_def()\n"
            "keys = AssetSelection.from_string(sys.argv[1]).resolve(defs.resolve_asset_graph())\n"
            "result = job.execute_in_process(instance=DagsterInstance.get(), asset_selection=list(keys),\n"
            "                                tags=json.loads(sys.argv[2]), raise_on_error=False)\n"
            "print('SUCCESS' if result.success else 'FAILURE')\n"
        )
        return subprocess.run([sys.executable, "-c", script, selection, json.dumps(tags or {})], cwd=self.repo,
                              env=self.env, capture_output=True, text=True, timeout=900)

    def react(self) -> str:
        """What the deployed sensor does on its next tick: ``dbt_test_failures`` reads the new dbt test results
        from Dagster's event log and launches the rescan, whose ``dbt_metadata`` runs first. Returns the models
        the rescan named."""
        script = (
            "from dagster import DagsterInstance, build_sensor_context\n"
            "from jaffle_dagster.definitions import defs\n"
            "instance = DagsterInstance.get()\n"
            "with build_sensor_context(instance=instance, definitions=defs, resources=defs.resources) as ctx:\n"
            "    tick = defs.resolve_sensor_def('dbt_test_failures')(ctx)\n"
            "[request] = tick.run_requests\n"
            "job = defs.resolve_job_def('recall_rescan')\n"
            "done = job.execute_in_process(run_config=request.run_config, instance=instance, tags=request.tags)\n"
            "print('MODELS', request.tags['recall/models'])\n"
            "print('SUCCESS' if done.success else 'FAILURE')\n"
        )
        done = subprocess.run([sys.executable, "-c", script], cwd=self.repo, env=self.env, capture_output=True,
                              text=True, timeout=900)
        assert "SUCCESS" in done.stdout, f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        return done.stdout.split("MODELS ", 1)[1].split("\n", 1)[0]

    def versions(self) -> list[int]:
        client = MlflowClient(tracking_uri=self.env["MLFLOW_TRACKING_URI"])
        return sorted(int(v.version) for v in client.search_model_versions("name = 'order_forecaster'"))


def estate(tmp_path_factory: pytest.TempPathFactory, mark: str) -> Iterator[Team]:
    """A team's estate built by one walkthrough, its MLflow a tracking server on localhost as teams run it:
    DataHub's mlflow source, in its own environment, reads it over HTTP whichever MLflow the team's holds."""
    root = tmp_path_factory.mktemp("adoption")
    with mlflow_server(f"sqlite:///{root / 'mlflow.db'}", root / "mlflow.log", root / "mlartifacts") as url:
        team = Team(root, url)
        team.must("dbt parse", cwd=team.dbt)
        refused = team.materialize("group:default")
        assert team.versions() == [], (
            "the first version: no graph and no version to judge, so by default the gate refuses; the walkthrough "
            "says how to train it past the gate")
        assert "SUCCESS" in refused.stdout, "the gate withheld itself: the training was skipped, nothing failed"
        assert "Recall's retrain gate refuses to retrain order_forecaster: UNVERIFIED: " in refused.stderr
        team.follow_walkthrough(mark)
        assert team.versions() == [1]
        yield team


def bad_load(team: Team) -> None:
    """The loader drops the amount of every tenth order."""
    seed = team.dbt / "seeds" / "raw_orders.csv"
    rows = list(csv.reader(seed.open()))
    for row in rows[1:]:
        if int(row[0]) % 10 == 0:
            row[3] = ""
    with seed.open("w", newline="") as out:
        csv.writer(out).writerows(rows)
