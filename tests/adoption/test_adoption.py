"""Adoption, proven on a team's project in the shape of Dagster's own dbt example: dbt on DuckDB, a pandas
training asset registering an MLflow version with the alias ``production`` and ``mlflow.log_input`` of MLflow's own
pandas dataset, DataHub's stock dbt and mlflow sources from ``recall init``'s recipes. The estate is built by the
documented walkthrough (docs/estate.md), every line of it run as written, and ``recall init`` must print the same order.

Healthy: the scan names the production model and the gate lets the retrain go. Broken (NULL amounts in the raw
orders reach a ``count(*)`` aggregate between them and the training input): the scan is CRITICAL, the gate NO-GO,
Dagster refuses the retrain, the incident names the model, a retrain forced past the gate is the contaminated
version the blind window names, and ``recall impact`` reaches the model.
"""

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

pytestmark = [pytest.mark.stack, pytest.mark.slow]

PROJECT = Path(__file__).parent / "project"
BIN = Path(sys.executable).parent
WALKTHROUGH = Path(__file__).parents[2] / "docs" / "estate.md"
MARK = "<!-- walkthrough:"


def walkthrough() -> list[str]:
    """The documented walkthrough block, its lines as a person pastes them (comments are not commands)."""
    text = WALKTHROUGH.read_text(encoding="utf-8")
    assert MARK in text, "docs/estate.md keeps its walkthrough"
    block = text.split(MARK, 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
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

    def follow_walkthrough(self) -> None:
        """The documented walkthrough, run line by line in one shell: each line must succeed, as written."""
        script = "set -e\n" + "".join(f"echo '+ {n}'\n{line}\n" for n, line in enumerate(walkthrough()))
        done = subprocess.run(["bash", "-c", script], cwd=self.root, env=self.env, capture_output=True, text=True,
                              timeout=1800)
        ran = [line for line in done.stdout.splitlines() if line.startswith("+ ")]
        assert done.returncode == 0, f"walkthrough line {ran[-1] if ran else '?'} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        self.env.update(RECALL_GRAPH=str(self.repo / "datahub.db"), RECALL_HOME=str(self.repo / ".recall"),
                        RECALL_CONFIG=str(self.repo / "recall" / "recall.yaml"))

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

    def versions(self) -> list[int]:
        client = MlflowClient(tracking_uri=self.env["MLFLOW_TRACKING_URI"])
        return sorted(int(v.version) for v in client.search_model_versions("name = 'order_forecaster'"))


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Team]:
    """The team's estate, its MLflow a tracking server on localhost as teams run it: DataHub's mlflow source,
    in its own environment, reads it over HTTP whichever MLflow the team's environment holds."""
    root = tmp_path_factory.mktemp("adoption")
    with mlflow_server(f"sqlite:///{root / 'mlflow.db'}", root / "mlflow.log", root / "mlartifacts") as url:
        yield from _estate(Team(root, url))


def _estate(team: Team) -> Iterator[Team]:
    team.must("dbt parse", cwd=team.dbt)
    refused = team.materialize("*")
    assert "FAILURE" in refused.stdout and team.versions() == [], (
        "the first version: no graph and no version to judge, so by default the gate refuses; the walkthrough says "
        "how to train it past the gate")
    team.follow_walkthrough()
    assert team.versions() == [1]
    yield team


def test_init_prints_the_order_the_readme_walks(team: Team) -> None:
    said = team.must(f"recall init --dir {team.root / 'elsewhere'}", cwd=team.repo)
    printed = [line.split("  #")[0].strip() for line in said.split("Then, in this order:", 1)[1].splitlines()
               if line.strip() and not line.strip().startswith("(")]
    target = f"{team.dbt.resolve() / 'target'}/"
    dbt_steps = [c.replace(target, "target/") for c in printed if c.startswith(("dbt ", "cp "))]
    readme = walkthrough()
    assert f"cd jaffle && {' && '.join(dbt_steps)} && cd .." in readme, (dbt_steps, readme)
    ingests = [c.rsplit("/", 1)[1] for c in printed if c.startswith("recall ingest")]
    assert ingests == [line.split("#")[0].strip().rsplit("/", 1)[1] for line in readme
                       if line.startswith("recall ingest")]


def test_a_healthy_stock_estate_names_its_production_model_and_lets_the_retrain_go(team: Team) -> None:
    code, scan = team.recall("scan")
    assert code == 0, scan
    assert [(m["name"], m["production"]) for m in scan["models"]] == [("order_forecaster_1", True)], (
        "the alias, from the registry: never 'no models'")
    assert scan["coverage"]["models"]["with_training_inputs"] == 1 and scan["coverage"]["unresolved_training_inputs"] == {}
    assert scan["coverage"]["datasets"]["with_freshness"] == scan["coverage"]["datasets"]["total"], (
        "dbt's builds and source freshness say when each table changed")
    code, gate = team.recall("gate", "order_forecaster")
    assert gate["verdict"] in ("GO", "UNVERIFIED") and code in (0, 4), gate
    assert gate["verdict"] == "GO" or gate["unverified_checks"], "UNVERIFIED names exactly what is missing"
    rows = next(c for c in gate["checks"] if c["name"] == "row_count_drop")
    assert rows["status"] == "PASS", f"counted now through the dbt profile init named, nothing else set: {rows}"


def test_a_bad_load_reaches_the_model_through_its_aggregate_in_every_answer(team: Team) -> None:
    seed = team.dbt / "seeds" / "raw_orders.csv"
    rows = list(csv.reader(seed.open()))
    for row in rows[1:]:
        if int(row[0]) % 10 == 0:
            row[3] = ""  # the loader drops the amount of every tenth order
    with seed.open("w", newline="") as out:
        csv.writer(out).writerows(rows)
    # The bad rows reach the aggregate: the team's nightly runs the models, then the tests (``dbt build`` would
    # skip everything below the first failing test and keep the last good tables), and nothing else: no copy,
    # no docs generate. The recipe init wrote reads what that leaves.
    team.must("dbt seed && dbt run", cwd=team.dbt)
    assert team.sh("dbt test", cwd=team.dbt).returncode == 1, "the not_null tests on amount fail"
    for recipe in ("dbt", "mlflow"):
        done = team.sh(f"recall ingest {team.repo / 'recall' / 'recipes' / f'{recipe}.yml'}")
        assert done.returncode == 0, done.stderr[-3000:]
        assert "recall ingest: installing" not in done.stderr, "the walkthrough's ingestion environment is reused"

    code, scan = team.recall("scan")
    [model] = scan["models"]
    assert code == 1 and model["tier"] == "CRITICAL", model
    assert "failing_assertion" in {f["detector"] for f in model["findings"]}
    code, gate = team.recall("gate", "order_forecaster")
    assert code == 1 and gate["verdict"] == "NO-GO", gate

    before = team.versions()
    refused = team.materialize("forecast")
    assert "FAILURE" in refused.stdout and "Recall's retrain gate refuses to retrain order_forecaster" in refused.stderr
    assert team.versions() == before, "Dagster refused the retrain: no version was registered"

    code, synced = team.recall("incidents", "sync")
    assert any(m["name"] == "order_forecaster_1" for i in synced["raised"] for m in i["models"]), synced

    code, impact = team.recall("impact", "stg_orders", "--column", "amount", "--mutation", "drop", "--no-write")
    assert impact["affected_models"] == 1, impact

    forced = team.materialize("forecast", {"recall/gate_override_by": "ana@jaffle.example",
                                           "recall/gate_override_reason": "the forecast must ship today"})
    assert "SUCCESS" in forced.stdout, forced.stderr[-3000:]
    team.must(f"recall ingest {team.repo / 'recall' / 'recipes' / 'mlflow.yml'}")
    code, window = team.recall("blind-window")
    versions = {v["name"]: v for c in window["causes"] for m in c["models"] for v in m["versions"]}
    assert versions["order_forecaster_2"]["verdict"] == "CONTAMINATED", versions
    assert versions["order_forecaster_2"]["gate_override"]["by"] == "ana@jaffle.example"
    assert versions["order_forecaster_1"]["verdict"] == "CLEAN", "trained before the bad load: the rollback"
    assert any(m["rollback"] and m["rollback"]["name"] == "order_forecaster_1"
               for c in window["causes"] for m in c["models"]), window
