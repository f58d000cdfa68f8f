"""Twins are one table on an estate whose warehouse source ingests views with their lineage beside the dbt source
(``views_estate``): a view's own dbt node is never among its upstreams, a finding's path names each table
once, and the healthy estate stays quiet, whether the graph is a Lite file or a GMS that also keeps siblings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from foreign_estate import OVERLAY
from views_estate import ingest_estate

from recall_dagster.cli import cli
from recall_dagster.estate import display_name

SHAPES = {"lite": False, "gms": True}  # whether DataHub's sibling hook joined the twins too


def scan(folder: Path, **estate: bool) -> list[dict[str, Any]]:
    """Every finding of a scan of the estate ``estate`` describes, through the CLI a team runs."""
    graph = ingest_estate(folder, **estate)
    (folder / "recall.yaml").write_text(json.dumps(OVERLAY))
    args = ["scan", "--json", "--graph", str(graph), "--config", str(folder / "recall.yaml"),
            "--as-of", "2025-06-01T00:00:00Z"]
    done = CliRunner().invoke(cli, args, env={"RECALL_HOME": str(folder / "home")})
    assert done.exit_code in (0, 1), done.output
    return [f for m in json.loads(done.output)["models"] for f in m["findings"]]


def tables(path: list[str]) -> list[str]:
    """The tables a path passes, by the name both twins carry (``shop.staging.stg_orders``)."""
    return [display_name(step) for step in path if step.startswith("urn:li:dataset:")]


@pytest.mark.parametrize("shape", SHAPES)
def test_a_view_and_its_dbt_node_are_one_upstream(tmp_path: Path, shape: str) -> None:
    """Nobody documented anything: only the mart merges two tables; each staging view reads one, its dbt
    node being the view itself."""
    found = [f for f in scan(tmp_path, gms=SHAPES[shape], documented=False)
             if f["detector"] == "undocumented_critical_path"]
    assert [(display_name(f["subject"]), f["evidence"]["fan_in"]) for f in found] == [
        ("shop.marts.customer_orders", 2)], [f["message"] for f in found]
    assert "merges 2 upstream datasets" in found[0]["message"]


@pytest.mark.parametrize("shape", SHAPES)
def test_an_evidence_path_names_each_table_once(tmp_path: Path, shape: str) -> None:
    """The failing dbt test sits on the staging model's dbt node, which the walk reaches through its view."""
    found = scan(tmp_path, gms=SHAPES[shape], test_passes=False)
    failing = [f for f in found if f["detector"] == "failing_assertion"]
    assert [tables(f["evidence"]["path"]) for f in failing] == [
        ["shop.marts.customer_orders", "shop.staging.stg_orders"]]
    for f in found:
        drawn = tables(f["evidence"]["path"])
        assert len(drawn) == len(set(drawn)), (f["detector"], f["evidence"]["path"])


@pytest.mark.parametrize("shape", SHAPES)
def test_the_healthy_estate_stays_quiet(tmp_path: Path, shape: str) -> None:
    """The mart described in dbt and owned there, its test passing: nothing to say, on either twin."""
    assert [f["message"] for f in scan(tmp_path, gms=SHAPES[shape])] == []
