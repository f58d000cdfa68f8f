"""A dbt recipe reads the artifacts a team's dbt left, whichever way it ran: ``dbt run`` then ``dbt test``, a
build with its results kept aside, dagster-dbt's invocations; what is missing is said with what it costs, and
only a missing manifest stops the run (DataHub's dbt source fails whole on a catalog or sources path that is
not there)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from recall_dagster.cli import cli
from recall_dagster.dbt_artifacts import readable
from recall_dagster.recipes import dbt_recipe, sink_config, write_recipe


def results(path: Path, which: str) -> None:
    """A run results file as dbt writes it: ``args.which`` names the command."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"metadata": {"dbt_version": "1.10.8"}, "results": [],
                                "args": {"which": which, "invocation_command": f"dbt {which}"}}))


def manifest(path: Path, compiled: bool = True) -> None:
    """A manifest as dbt writes it: ``dbt parse`` leaves a model's ``compiled_code`` out, a build fills it in."""
    path.parent.mkdir(parents=True, exist_ok=True)
    node = {"resource_type": "model", "raw_code": "select 1", **({"compiled_code": "select 1"} if compiled else {})}
    path.write_text(json.dumps({"nodes": {"model.jaffle.daily_orders": node}}))


def recipe(target: Path) -> dict:
    return dbt_recipe(target, "duckdb", sink_config(str(target.parent / "datahub.db")))


def test_run_then_test_reads_the_test_results_and_leaves_out_what_dbt_did_not_write(tmp_path: Path) -> None:
    target = tmp_path / "target"
    manifest(target / "manifest.json")
    results(target / "run_results.json", "test")
    runnable, said = readable(recipe(target))
    config = runnable["source"]["config"]
    assert "catalog_path" not in config and "sources_path" not in config
    assert config["run_results_paths"] == [str(target / "run_results*.json")], "dagster-dbt left none"
    assert [line.split(" (")[0] for line in said] == ["catalog.json is not there", "sources.json is not there"], (
        "no dagster-dbt invocation is no loss when dbt's own results are there")


def test_dagster_dbt_s_invocations_are_read_and_docs_generate_s_results_alone_are_named(tmp_path: Path) -> None:
    target = tmp_path / "target"
    manifest(target / "manifest.json")
    for name in ("catalog.json", "sources.json"):
        (target / name).write_text("{}")
    results(target / "run_results.json", "generate")
    full = recipe(target)
    _, said = readable(full)
    assert said[-1].startswith("no run results of dbt build, run or test among run_results.json: test outcomes")
    results(target / "jaffle_dbt_assets-79b23f3-d0550d2" / "run_results.json", "build")
    runnable, said = readable(full)
    assert runnable == full and said == [], "everything there: the recipe runs as written, nothing said"


def test_inside_dagster_the_newest_build_s_manifest_brings_the_compiled_sql(tmp_path: Path) -> None:
    """dagster-dbt's ``prepare_if_dev`` leaves ``target/manifest.json`` from ``dbt parse``: no compiled SQL, so no
    column lineage. The newest invocation that compiled is read instead, and the recipe says which."""
    target = tmp_path / "target"
    manifest(target / "manifest.json", compiled=False)
    runnable, said = readable(recipe(target))
    assert runnable["source"]["config"]["manifest_path"] == str(target / "manifest.json")
    assert any("holds no compiled SQL (`dbt parse` wrote it): the dbt source records no column lineage" in line
               for line in said), said
    older, newer = target / "jaffle_dbt_assets-1111111-aaaaaaa", target / "jaffle_dbt_assets-2222222-bbbbbbb"
    for folder in (older, newer):
        manifest(folder / "manifest.json")
        results(folder / "run_results.json", "build")
    manifest(target / "jaffle_dbt_assets-3333333-ccccccc" / "manifest.json", compiled=False)  # a `dbt parse`
    os.utime(older / "manifest.json", (1, 1))
    runnable, said = readable(recipe(target))
    assert runnable["source"]["config"]["manifest_path"] == str(newer / "manifest.json")
    assert f"read {newer / 'manifest.json'}, the newest dbt invocation's manifest that does" in said[0], said
    assert not any("no run results" in line for line in said), "the invocations' run results are read"


def test_a_variable_or_a_remote_path_is_datahub_s_to_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DBT_TARGET_DIR", str(tmp_path))
    manifest(tmp_path / "manifest.json")
    results(tmp_path / "run_results.json", "build")
    given = {"source": {"type": "dbt", "config": {
        "manifest_path": "${DBT_TARGET_DIR}/manifest.json", "catalog_path": "s3://bucket/catalog.json",
        "sources_path": "${UNSET_DIR}/sources.json", "run_results_paths": ["${DBT_TARGET_DIR}/run_results.json"]}}}
    assert readable(given) == (given, [])
    other = {"source": {"type": "mlflow", "config": {"tracking_uri": "x"}}}
    assert readable(other) == (other, [])


def test_a_missing_manifest_stops_recall_ingest_before_anything_installs(tmp_path: Path) -> None:
    """Nothing can be read without a manifest: exit 2 naming it and what writes it, the team's recipe as
    written and no environment made."""
    target = tmp_path / "target"
    path = write_recipe(tmp_path / "recipes", "dbt", recipe(target))
    written = path.read_text()
    done = CliRunner().invoke(cli, ["ingest", str(path)], env={"RECALL_HOME": str(tmp_path / "home")})
    assert done.exit_code == 2 and "manifest.json does not exist: any dbt command writes it" in done.output
    assert not (tmp_path / "home" / "ingest").exists(), "refused before anything installs"
    assert path.read_text() == written
    assert yaml.safe_load(written)["source"]["config"]["catalog_path"] == str(target / "catalog.json")
