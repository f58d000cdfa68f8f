"""DataHub's sources run in an environment of their own (`recall ingest`): what it installs for which recipe,
what it refuses, and that Recall's Lite sink needs nothing of the team's stack there. The whole path, from
`recall init` to a scan, runs in tests/adoption (the walkthrough) and in every team environment of envs/."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from recall_dagster.cli import cli
from recall_dagster.errors import ConfigError, EXIT_USAGE
from recall_dagster.ingest_env import STORE_CLIENT, plugins, read_recipe, store_packages, unreadable_store
from recall_dagster.recipes import LITE_SINK

OFFERED = ["datahub-rest", "dbt", "feast", "mlflow", "postgres"]
LITE = {"type": LITE_SINK, "config": {"type": "sqlite", "config": {"file": "datahub.db"}}}


def recipe(source: str, sink: dict | None = None, **config: str) -> dict:
    return {"source": {"type": source, "config": config}, "sink": sink or LITE}


def test_each_source_and_datahub_sink_is_an_extra_and_recall_s_sink_none() -> None:
    assert plugins([recipe("dbt"), recipe("mlflow", tracking_uri="http://mlflow:5000")], OFFERED) == ["dbt", "mlflow"]
    assert plugins([recipe("mlflow", {"type": "datahub-rest", "config": {"server": "https://gms"}})], OFFERED) == [
        "datahub-rest", "mlflow"]
    assert plugins([recipe("file"), recipe("my_company.sources.Custom")], OFFERED) == [], (
        "the file source comes with acryl-datahub, and a class path is the team's own")


def test_an_mlflow_store_in_a_database_brings_the_client_that_opens_it() -> None:
    assert store_packages([recipe("mlflow", tracking_uri="sqlite:////srv/mlflow.db")]) == sorted(STORE_CLIENT)
    assert "psycopg2-binary" in store_packages([recipe("mlflow", tracking_uri="postgresql+psycopg2://m@db/mlflow")])
    assert store_packages([recipe("mlflow", tracking_uri="http://127.0.0.1:5000"), recipe("dbt")]) == []


def test_a_database_store_of_mlflow_2_21_or_later_is_said_to_need_its_server() -> None:
    said = unreadable_store("sqlite:///mlflow.db", "3.17.2")
    assert said is not None and "tracking server" in said and "3.17.2" in said
    assert unreadable_store("sqlite:///mlflow.db", "2.20.4") is None
    assert unreadable_store("http://127.0.0.1:5000", "3.17.2") is None


@pytest.mark.parametrize(("text", "said"), [
    ("source: [unclosed", "is not YAML"),
    ("sink: {type: file}\n", "names no source.type"),
    ("- just\n- a list\n", "names no source.type"),
])
def test_a_file_that_is_not_a_recipe_is_refused_before_anything_installs(tmp_path: Path, text: str,
                                                                          said: str) -> None:
    path = tmp_path / "recipe.yml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=said):
        read_recipe(path)
    done = CliRunner().invoke(cli, ["ingest", str(path)])
    assert done.exit_code == EXIT_USAGE and said in done.output
    assert not (tmp_path / "home" / "ingest").exists()


def test_recall_s_sink_imports_with_datahub_s_sdk_alone() -> None:
    """What the ingestion environment holds is acryl-datahub and the sources' own packages: the sink loads
    nothing of the team's stack (Dagster, MLflow, pandas, SQLAlchemy; Rich is httpx's own optional import)."""
    probe = ("import sys, recall_dagster.graph.lite_sink; "
             "print(sorted(m for m in ('dagster', 'mlflow', 'pandas', 'numpy', 'sqlalchemy', 'jinja2') "
             "if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
