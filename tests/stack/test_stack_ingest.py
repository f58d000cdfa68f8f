"""The demo runs DataHub's sources as `recall ingest` does: `datahub ingest -c` in the ingestion environment
beside its own (made by `make install` from constraints-ingest.txt), writing the estate's Lite file through
Recall's sink; a failing recipe names itself and shows the end of its log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata.schema_classes import StatusClass

from recall_dagster.errors import StackError
from recall_dagster.graph import open_graph
from recall_dagster.settings import Settings
from seed.ingest.recipes import dbt_recipe, ingestion_env, run_recipes, sink_config

pytestmark = pytest.mark.stack

URNS = [f"urn:li:dataset:(urn:li:dataPlatform:postgres,warehouse.marts.t{i},PROD)" for i in range(3)]


def test_a_recipe_runs_in_the_ingestion_environment_and_counts_what_it_wrote(tmp_path: Path) -> None:
    settings = Settings.under(tmp_path / "home")
    settings.ensure_home()
    mcps = tmp_path / "mcps.json"
    mcps.write_text(json.dumps([MetadataChangeProposalWrapper(entityUrn=u, aspect=StatusClass(removed=False)).to_obj()
                                for u in URNS]))
    recipe = {"source": {"type": "file", "config": {"path": str(mcps)}}, "sink": sink_config(settings)}
    assert run_recipes(settings, [("file", recipe)]) == len(URNS)
    graph = open_graph(settings, read_only=True)
    try:
        assert sorted(graph.list_urns("dataset")) == sorted(URNS)
    finally:
        graph.close()
    assert (settings.recipes_dir / "file.yml").exists(), "the recipe stays where a person can rerun it"
    assert ingestion_env().installed()[0] >= {"dbt", "feast", "mlflow"}, "make install made it for the demo"


def test_a_failing_recipe_names_itself_and_shows_the_end_of_its_log(tmp_path: Path) -> None:
    settings = Settings.under(tmp_path / "home")
    settings.ensure_home()
    recipe = dbt_recipe(settings, tmp_path / "no-target", [tmp_path / "no-target" / "run_results.json"])
    with pytest.raises(StackError, match=r"ingestion recipe .*dbt\.yml failed in .*ingest") as caught:
        run_recipes(settings, [("dbt", recipe)])
    assert "manifest.json" in str(caught.value), "the log's end says what was missing"
