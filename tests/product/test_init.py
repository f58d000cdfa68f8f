"""``recall init`` on a team's dbt project: recipes DataHub's own sources run as written, a starter recall.yaml
the loader accepts, the order of commands that keeps dbt's artifacts, and a second run that changes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from recall_dagster.cli import cli
from recall_dagster.recipes import LITE_SINK
from recall_dagster.config.load import load


def project(tmp_path: Path, output: dict | None = None) -> Path:
    """A dbt project on DuckDB (unless ``output`` names another) as Dagster's own examples lay one out, its
    profile beside it."""
    folder = tmp_path / "jaffle"
    folder.mkdir()
    (folder / "dbt_project.yml").write_text("name: jaffle\nprofile: jaffle\nversion: '1.0'\ntarget-path: build\n")
    (folder / "profiles.yml").write_text(yaml.safe_dump(
        {"jaffle": {"target": "dev", "outputs": {"dev": output or {"type": "duckdb", "path": "jaffle.duckdb"}}}}
    ))
    return folder


def init(tmp_path: Path, *args: str) -> tuple[int, str]:
    done = CliRunner().invoke(cli, ["init", "--dir", str(tmp_path / "recall"), *args],
                              env={"RECALL_GRAPH": "", "MLFLOW_TRACKING_URI": ""})
    return done.exit_code, done.output


def test_recipes_for_a_lite_file_override_and_name_recall_s_sink(tmp_path: Path) -> None:
    dbt = project(tmp_path)
    code, said = init(tmp_path, "--dbt-project", str(dbt), "--mlflow", "sqlite:///mlflow.db")
    assert code == 0, said
    recipe = yaml.safe_load((tmp_path / "recall" / "recipes" / "dbt.yml").read_text())
    source = recipe["source"]["config"]
    assert (source["target_platform"], source["write_semantics"]) == ("duckdb", "OVERRIDE")
    assert source["manifest_path"] == str(dbt.resolve() / "build" / "manifest.json"), "the project's target-path"
    assert source["sources_path"] == str(dbt.resolve() / "build" / "sources.json"), (
        "named though not there yet: recall ingest reads it once dbt source freshness writes it")
    assert recipe["sink"]["type"] == LITE_SINK
    mlflow = yaml.safe_load((tmp_path / "recall" / "recipes" / "mlflow.yml").read_text())
    assert mlflow["source"]["config"]["tracking_uri"] == "sqlite:///mlflow.db"
    lines = said.splitlines()
    order = [next(i for i, line in enumerate(lines) if line.strip().startswith(c))
             for c in ("dbt source freshness", "dbt build", "cp ", "dbt docs generate", "recall ingest")]
    assert order == sorted(order), "docs generate's manifest (compiled SQL: column lineage) is the one ingested"
    assert source["run_results_paths"] == [str(dbt.resolve() / "build" / "run_results*.json"),
                                           str(dbt.resolve() / "build" / "*" / "run_results.json")], (
        "the build's results kept where docs generate does not write, the last command's, and dagster-dbt's")
    assert f"cp {dbt.resolve() / 'build'}/run_results.json {dbt.resolve() / 'build'}/run_results.build.json" in said
    assert load(str(tmp_path / "recall" / "recall.yaml")).scan.scoring.fail_tier == "CRITICAL", (
        "the starter is a valid, empty overlay")


def test_a_gms_keeps_patch_and_reads_the_token_from_the_environment(tmp_path: Path) -> None:
    code, said = init(tmp_path, "--dbt-project", str(project(tmp_path)), "--graph", "https://datahub.example.com")
    assert code == 0, said
    recipe = yaml.safe_load((tmp_path / "recall" / "recipes" / "dbt.yml").read_text())
    assert "write_semantics" not in recipe["source"]["config"]
    assert recipe["sink"] == {"type": "datahub-rest",
                              "config": {"server": "https://datahub.example.com", "token": "${DATAHUB_GMS_TOKEN}"}}


def test_a_second_run_keeps_what_is_there_and_force_rewrites_it(tmp_path: Path) -> None:
    dbt = project(tmp_path)
    assert init(tmp_path, "--dbt-project", str(dbt))[0] == 0
    (tmp_path / "recall" / "recall.yaml").write_text("scoring: {fail_tier: AT_RISK}\n")
    code, said = init(tmp_path, "--dbt-project", str(dbt))
    assert code == 0 and "kept" in said and "AT_RISK" in (tmp_path / "recall" / "recall.yaml").read_text()
    assert init(tmp_path, "--dbt-project", str(dbt), "--force")[0] == 0
    assert "AT_RISK" not in (tmp_path / "recall" / "recall.yaml").read_text()


def test_run_in_a_repository_root_it_finds_the_dbt_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As a team runs it, with no flags: the dbt project under the current folder, wherever it sits; dbt's own
    output and packages are never taken for a second project."""
    dbt = project(tmp_path)
    (dbt / "dbt_packages" / "dbt_utils").mkdir(parents=True)
    (dbt / "dbt_packages" / "dbt_utils" / "dbt_project.yml").write_text("name: dbt_utils\n")
    monkeypatch.chdir(tmp_path)
    code, said = init(tmp_path)
    assert code == 0, said
    assert f"found the dbt project {dbt}" in said
    source = yaml.safe_load((tmp_path / "recall" / "recipes" / "dbt.yml").read_text())["source"]["config"]
    assert source["manifest_path"] == str(dbt.resolve() / "build" / "manifest.json")
    assert "dbt_project:" in (tmp_path / "recall" / "recall.yaml").read_text(), "row counts through its profile"
    written = (tmp_path / "recall" / "recall.yaml").read_text()
    assert written.count("dagster:") == 1, "one dagster section: the example's, made live"
    loaded = load(str(tmp_path / "recall" / "recall.yaml"))
    assert loaded.dagster.dbt_recipe == str((tmp_path / "recall" / "recipes" / "dbt.yml").resolve()), (
        "in Dagster, recall_definitions(dbt=...) ingests what dagster-dbt ran with it: no copy step")
    assert "(dbt inside Dagster: merge recall_definitions(recall, dbt=<your dbt assets>)" in said
    assert "DataHub has no duckdb source" in said and not (tmp_path / "recall" / "recipes" / "duckdb.yml").exists()


def test_the_warehouse_gets_its_own_recipe_and_no_secret_is_copied(tmp_path: Path) -> None:
    """A Postgres profile: DataHub's postgres source, reaching what dbt reaches; what the profile reads from the
    environment stays a variable DataHub expands, and a password written in the profile stays out of the file."""
    dbt = project(tmp_path, {"type": "postgres", "host": "{{ env_var('PG_HOST') }}", "user": "ana",
                             "port": "{{ env_var('PG_PORT') | as_number }}", "password": "hunter2",
                             "dbname": "analytics", "schema": "marts"})
    code, said = init(tmp_path, "--dbt-project", str(dbt))
    assert code == 0, said
    written = (tmp_path / "recall" / "recipes" / "postgres.yml").read_text()
    recipe = yaml.safe_load(written)
    assert recipe["source"] == {"type": "postgres", "config": {
        "host_port": "${PG_HOST}:${PG_PORT}", "database": "analytics", "username": "ana",
        "password": "${POSTGRES_PASSWORD}"}}
    assert "hunter2" not in written and recipe["sink"]["type"] == LITE_SINK
    assert "views with their lineage" in said
    ingests = [line.split()[2] for line in said.splitlines() if line.strip().startswith("recall ingest")]
    assert [Path(p).name for p in ingests] == ["dbt.yml", "postgres.yml"]


def test_what_init_cannot_work_from_is_a_usage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, said = init(tmp_path)
    assert code == 2 and "nothing to write recipes for" in said
    (tmp_path / "a").mkdir()
    project(tmp_path / "a")
    (tmp_path / "b").mkdir()
    project(tmp_path / "b")
    code, said = init(tmp_path)
    assert code == 2 and "found 2 dbt projects here (a/jaffle, b/jaffle): name one with --dbt-project" in said
    (tmp_path / "bare").mkdir()
    (tmp_path / "bare" / "dbt_project.yml").write_text("name: bare\n")
    code, said = init(tmp_path, "--dbt-project", str(tmp_path / "bare"))
    assert code == 2 and "names no profile" in said
