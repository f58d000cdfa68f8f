"""``recall protect`` on the demo: the NULL-price column is among the top gaps before the break, and the dbt test
it suggests, merged into a copy of the dbt project, passes on the healthy load and catches the broken one."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest
import yaml
from click.testing import CliRunner

from recall_dagster.cli import cli
from recall_dagster.progress import Progress
from recall_dagster.settings import Settings
from seed import lifecycle
from seed.stack.dbt import PROJECT_DIR, dbt_env
from seed.stack.warehouse import ensure_warehouse
from tests.conftest import built_estate, point_recall_at

pytestmark = [pytest.mark.stack, pytest.mark.slow]


@pytest.fixture(scope="module")
def estate(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    with built_estate(tmp_path_factory.mktemp("protect")) as settings:
        yield settings


def merge_suggestions(project: Path, suggested: dict) -> None:
    """What a person pasting the suggestion does: each column's tests into the file that declares its table."""
    files = sorted(project.glob("models/**/*.yml"))
    for source in suggested.get("sources", ()):
        for table in source["tables"]:
            for path in files:
                doc = yaml.safe_load(path.read_text())
                declared = [s for s in doc.get("sources", ()) if s["name"] == source["name"]]
                entry = next((t for s in declared for t in s.get("tables", ()) if t["name"] == table["name"]), None)
                if entry is None:
                    continue
                columns = entry.setdefault("columns", [])
                for column in table["columns"]:
                    existing = next((c for c in columns if c["name"] == column["name"]), None)
                    if existing is None:
                        columns.append(column)
                    else:
                        existing.setdefault("data_tests", []).extend(column["data_tests"])
                path.write_text(yaml.safe_dump(doc, sort_keys=False))


def dbt_test(project: Path, settings: Settings, select: str) -> dict[str, str]:
    """Run ``dbt test`` in the copy; each test's status by name."""
    target = project / "target"
    env = {**os.environ, **dbt_env(ensure_warehouse(settings))}
    subprocess.run(
        [str(Path(sys.executable).with_name("dbt")), "test", "--select", select, "--project-dir", str(project),
         "--profiles-dir", str(project), "--target-path", str(target), "--log-path", str(project / "logs")],
        env=env, capture_output=True, text=True, timeout=600,
    )
    results = json.loads((target / "run_results.json").read_text())["results"]
    return {r["unique_id"].split(".")[2]: r["status"] for r in results}


def test_the_null_price_column_is_a_top_gap_and_its_suggested_test_catches_the_bad_load(
    estate: Settings, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    point_recall_at(estate, monkeypatch)
    done = CliRunner().invoke(cli, ["protect", "--json"])
    assert done.exit_code == 0, done.output
    report = json.loads(done.stdout)
    top = [g["column"] for g in report["gaps"][:5]]
    assert "warehouse.raw.orders.unit_price" in top, top
    price = next(g for g in report["gaps"] if g["column"] == "warehouse.raw.orders.unit_price")
    assert {"order_unit_price", "amount_to_price_ratio"} <= set(price["features"]) and "fraud_detector" in price["models"]
    scores = {d["name"]: d for d in report["datasets"]}
    assert all(0 <= d["score"] <= 100 for d in scores.values())

    project = tmp_path / "dbt_project"
    shutil.copytree(PROJECT_DIR, project, ignore=shutil.ignore_patterns("target", "logs", "dbt_packages"))
    merge_suggestions(project, yaml.safe_load(report["dbt_tests"]))
    added = "source_not_null_raw_orders_unit_price"
    assert dbt_test(project, estate, "source:raw.orders").get(added) == "pass", "the healthy load passes it"

    lifecycle.break_estate(estate, Progress(quiet=True))
    assert dbt_test(project, estate, "source:raw.orders").get(added) == "fail", "and it catches the NULL prices"
