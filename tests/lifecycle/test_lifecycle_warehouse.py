"""Row counts and the impact query through the team's own dbt profile, with nothing else configured; the
connections a team names still come first; what the profile cannot give is a reason, never a guess."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
import yaml
from click.testing import CliRunner

from recall_dagster.cli import cli
from recall_dagster.errors import ConfigError
from recall_dagster.config.load import load
from recall_dagster.config.warehouse import NO_WAREHOUSE, Warehouse
from recall_dagster.lifecycle.rows import sql_row_counter
from recall_dagster.warehouse import DbtTarget, dbt_target, sqlalchemy_url, warehouse_connection

ORDERS = "urn:li:dataset:(urn:li:dataPlatform:duckdb,jaffle.main.orders,PROD)"
ELSEWHERE = "urn:li:dataset:(urn:li:dataPlatform:duckdb,other.main.orders,PROD)"



def _at(project: Path) -> Warehouse:
    """The warehouse section naming ``project``, the rest as shipped."""
    return NO_WAREHOUSE.model_copy(update={"dbt_project": str(project)})


def team_project(tmp_path: Path, output: dict) -> Path:
    """A dbt project whose profile sits beside it, as Dagster's dbt example keeps it."""
    folder = tmp_path / "jaffle"
    folder.mkdir()
    (folder / "dbt_project.yml").write_text("name: jaffle\nprofile: jaffle\nversion: '1.0'\n")
    (folder / "profiles.yml").write_text(yaml.safe_dump({"jaffle": {"target": "dev", "outputs": {"dev": output}}}))
    return folder


def duckdb_project(tmp_path: Path, rows: int = 5) -> Path:
    path = tmp_path / "jaffle.duckdb"
    with duckdb.connect(str(path)) as conn:
        conn.execute("CREATE TABLE main.orders AS SELECT range AS id FROM range(?)", [rows])
    return team_project(tmp_path, {"type": "duckdb", "path": "{{ env_var('JAFFLE_DUCKDB') }}", "threads": 1})


def test_the_dbt_profile_counts_rows_with_no_connection_configured(tmp_path: Path) -> None:
    project = duckdb_project(tmp_path, rows=5)
    env = {"JAFFLE_DUCKDB": str(tmp_path / "jaffle.duckdb")}
    counter = sql_row_counter((), environ=env, warehouse=_at(project))
    counted = counter({"main.orders": [ORDERS]})
    assert counted.counts == {"main.orders": 5}, counted.skipped
    node = "urn:li:dataset:(urn:li:dataPlatform:dbt,jaffle.main.orders,PROD)"
    assert counter({"main.orders": [node]}).counts == {"main.orders": 5}, "the dbt node names the same relation"
    other = counter({"main.orders": [ELSEWHERE]})
    assert other.counts == {} and "no connection" in other.skipped["main.orders"], (
        "a table of another database is not counted in the profile's")


def test_dbt_project_dir_from_the_environment_as_dbt_reads_it(tmp_path: Path) -> None:
    project = duckdb_project(tmp_path, rows=3)
    env = {"JAFFLE_DUCKDB": str(tmp_path / "jaffle.duckdb"), "DBT_PROJECT_DIR": str(project)}
    counter = sql_row_counter((), environ=env, warehouse=NO_WAREHOUSE)
    assert counter({"main.orders": [ORDERS]}).counts == {"main.orders": 3}


def test_a_named_connection_wins_and_an_unset_one_gives_way_to_the_profile(tmp_path: Path) -> None:
    project = duckdb_project(tmp_path, rows=5)
    other = tmp_path / "copy.duckdb"
    with duckdb.connect(str(other)) as conn:
        conn.execute("CREATE TABLE main.orders AS SELECT range AS id FROM range(9)")
    env = {"JAFFLE_DUCKDB": str(tmp_path / "jaffle.duckdb")}
    warehouse = _at(project)
    named = sql_row_counter((("duckdb:jaffle.*", f"duckdb:///{other}"),), environ=env, warehouse=warehouse)
    assert named({"main.orders": [ORDERS]}).counts == {"main.orders": 9}, "lifecycle.row_counts overrides"
    unset = sql_row_counter((("duckdb:*", "env:NOT_SET"),), environ=env, warehouse=warehouse)
    assert unset({"main.orders": [ORDERS]}).counts == {"main.orders": 5}


def test_what_the_profile_cannot_give_is_the_reason(tmp_path: Path) -> None:
    project = duckdb_project(tmp_path)
    counted = sql_row_counter((), environ={}, warehouse=_at(project))({"t": [ORDERS]})
    assert counted.counts == {}
    assert "env_var('JAFFLE_DUCKDB'), which is not set" in counted.skipped["t"]
    (tmp_path / "odd").mkdir()
    odd = team_project(tmp_path / "odd", {"type": "teradata", "host": "h"})
    _, url, why = warehouse_connection(_at(odd), {})
    assert url is None and "teradata" in why and "lifecycle.row_counts" in why
    assert warehouse_connection(NO_WAREHOUSE, {}) == ((), None, ""), "no project: no warehouse"


def test_the_profile_s_target_and_values_are_read_as_dbt_reads_them(tmp_path: Path) -> None:
    folder = team_project(tmp_path, {"type": "postgres", "host": "db", "port": 6543, "user": "ana",
                                     "password": "{{ env_var('PG_PASSWORD') }}", "dbname": "Analytics",
                                     "schema": "marts"})
    target = dbt_target(folder, environ={"PG_PASSWORD": "p@ss/word"})
    assert (target.platform, target.database, target.name) == ("postgres", "Analytics", "dev")
    assert sqlalchemy_url(target) == "postgresql+psycopg2://ana:p%40ss%2Fword@db:6543/Analytics"
    globs, _, _ = warehouse_connection(_at(folder), {"PG_PASSWORD": "x"})
    assert globs == ("postgres:analytics.*", "dbt:analytics.*"), (
        "DataHub's dbt source lowercases names, and its dbt nodes are relations of the same warehouse")
    with pytest.raises(ConfigError, match="no output 'prod'"):
        dbt_target(folder, target="prod", environ={"PG_PASSWORD": "x"})
    assert dbt_target(folder, environ={"PG_PASSWORD": "x", "DBT_TARGET": "dev"}).name == "dev"
    snow = DbtTarget(folder, folder / "target", "jaffle", "dev", {"type": "snowflake", "account": "xy123",
                     "user": "u", "password": "p", "database": "RAW", "schema": "PUBLIC", "warehouse": "WH"})
    assert sqlalchemy_url(snow) == "snowflake://u:p@xy123/RAW/PUBLIC?warehouse=WH"


def test_init_names_the_project_so_gate_and_impact_reach_the_warehouse(tmp_path: Path) -> None:
    project = duckdb_project(tmp_path)
    done = CliRunner().invoke(cli, ["init", "--dir", str(tmp_path / "recall"), "--dbt-project", str(project)],
                              env={"RECALL_GRAPH": "", "MLFLOW_TRACKING_URI": ""})
    assert done.exit_code == 0, done.output
    config = str(tmp_path / "recall" / "recall.yaml")
    assert load(config).lifecycle.warehouse.dbt_project == str(project.resolve())
    loaded = load(config)
    query = loaded.impact.evaluation.query
    assert query.url({"JAFFLE_DUCKDB": str(tmp_path / "jaffle.duckdb")}, loaded.warehouse) == (
        f"duckdb:///{tmp_path / 'jaffle.duckdb'}", ""), "the training query reruns where dbt builds"
    shipped = load(None)
    assert shipped.impact.evaluation.query.url({}, shipped.warehouse)[0] is None, "no project: the fallback is off"


def test_dbt_s_own_filters_render_as_dbt_renders_them(tmp_path: Path) -> None:
    """dbt's documented profile filters: a port written ``{{ env_var('PG_PORT') | as_number }}`` reaches the URL,
    and a value dbt would refuse is refused with the value named."""
    folder = team_project(tmp_path, {"type": "postgres", "host": "{{ env_var('PG_HOST') | as_text }}",
                                     "port": "{{ env_var('PG_PORT') | as_number }}", "user": "ana",
                                     "password": "{{ env_var('PG_PASSWORD') | as_native }}", "dbname": "analytics",
                                     "schema": "marts", "keepalives_idle": "{{ 'True' | as_bool }}"})
    target = dbt_target(folder, environ={"PG_HOST": "db", "PG_PORT": "6543", "PG_PASSWORD": "s3cret"})
    assert sqlalchemy_url(target) == "postgresql+psycopg2://ana:s3cret@db:6543/analytics"
    assert target.value("keepalives_idle") == "True"
    with pytest.raises(ConfigError, match=r"gives 'sixty', which is not a number"):
        sqlalchemy_url(dbt_target(folder, environ={"PG_HOST": "db", "PG_PORT": "sixty", "PG_PASSWORD": "s"}))
