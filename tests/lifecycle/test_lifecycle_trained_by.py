"""The Dagster run that trained a version, from the MLflow run tag dagster-mlflow writes (``dagster_run_id``),
or the demo's training writes itself; linked under the configured webserver, invented never."""

from __future__ import annotations

from recall_dagster.lifecycle.trained_by import DagsterRun

UI = "http://dagster.shop.example:3000"


def test_without_the_tag_or_the_address_nothing_is_invented() -> None:
    assert DagsterRun.of({}, UI) is None
    assert DagsterRun.of({"dagster_run_id": "abc-123"}, "") == DagsterRun("abc-123", None)
    assert DagsterRun.of({"dagster_run_id": "abc-123"}, UI).url == f"{UI}/runs/abc-123"
