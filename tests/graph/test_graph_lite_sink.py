"""RecallLiteSink: a recipe's PATCH proposals reach the Lite graph merged, not dropped."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
import yaml
from datahub.configuration.common import PipelineExecutionError
from datahub.emitter.aspect import JSON_PATCH_CONTENT_TYPE
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.ingestion.run.pipeline import Pipeline
from datahub.ingestion.sink.file import write_metadata_file
from datahub.lite.sqlite_lite import SqliteLite
from datahub.lite.sqlite_lite_config import SqliteLiteConfig
from datahub.metadata.schema_classes import (
    ChangeTypeClass,
    GenericAspectClass,
    GlobalTagsClass,
    MetadataChangeProposalClass,
    SiblingsClass,
    TagAssociationClass,
    UpstreamClass,
    UpstreamLineageClass,
)
from datahub.specific.dataset import DatasetPatchBuilder

from recall_dagster.graph import AspectMap, LiteGraph

DATAHUB_CLI = Path(sys.executable).with_name("datahub")

# The SDK's Lite engine calls its own deprecated URN helpers on every write.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:datahub.lite.sql_backed_lite")

SINK = "recall_dagster.graph.lite_sink.RecallLiteSink"
PG = "urn:li:dataset:(urn:li:dataPlatform:postgres,warehouse.marts.fct_transactions,PROD)"
DBT = "urn:li:dataset:(urn:li:dataPlatform:dbt,warehouse.marts.fct_transactions,PROD)"
RAW = "urn:li:dataset:(urn:li:dataPlatform:postgres,warehouse.raw.transactions,PROD)"


def _dbt_patches() -> list[MetadataChangeProposalClass]:
    """What the dbt source sends for a warehouse table it models (target_platform: postgres)."""
    lineage = (
        DatasetPatchBuilder(PG)
        .add_upstream_lineage(UpstreamClass(dataset=DBT, type="TRANSFORMED"))
        .add_sibling(DBT, primary=True)
    )
    tags = DatasetPatchBuilder(PG).add_tag(TagAssociationClass("urn:li:tag:gold"))
    return [*lineage.build(), *tags.build()]


def _recipe(tmp_path: Path, proposals: list[Any]) -> dict[str, Any]:
    source = tmp_path / "mcps.json"
    write_metadata_file(source, proposals)
    return {
        "source": {"type": "file", "config": {"path": str(source)}},
        "sink": {"type": SINK, "config": {"type": "sqlite", "config": {"file": str(tmp_path / "graph.db")}}},
    }


def _seed(path: Path) -> None:
    """What the postgres source wrote before dbt ran."""
    lineage = UpstreamLineageClass(upstreams=[UpstreamClass(dataset=RAW, type="TRANSFORMED")])
    tags = GlobalTagsClass(tags=[TagAssociationClass("urn:li:tag:pii")])
    with closing(LiteGraph(path)) as graph:
        report = graph.emit_mcps(MetadataChangeProposalWrapper.construct_many(PG, [lineage, tags]))
    assert report.ok


def _read(path: Path) -> tuple[AspectMap, int]:
    """The table's patched aspects, and how many aspect versions the file holds."""
    with closing(LiteGraph(path, read_only=True)) as graph:
        aspects = graph.get_aspects([PG], [UpstreamLineageClass, GlobalTagsClass, SiblingsClass])
    with closing(sqlite3.connect(path)) as con:
        versions = con.execute("SELECT count(*) FROM metadata_aspect_v2").fetchone()[0]
    return aspects, versions


@pytest.fixture(autouse=True)
def _quiet_datahub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("DATAHUB_TELEMETRY_ENABLED", "false")


def test_a_recipe_merges_patches_and_rerunning_changes_nothing(tmp_path: Path) -> None:
    recipe = _recipe(tmp_path, _dbt_patches())
    graph_file = tmp_path / "graph.db"
    _seed(graph_file)

    first = Pipeline.create(recipe)
    first.run()
    first.raise_from_status()
    merged, versions = _read(graph_file)

    assert first.sink.get_report().total_records_written == 3
    table: Any = merged[PG]
    assert [u.dataset for u in table["upstreamLineage"].upstreams] == [RAW, DBT]
    assert [t.tag for t in table["globalTags"].tags] == ["urn:li:tag:pii", "urn:li:tag:gold"]
    assert table["siblings"] == SiblingsClass(siblings=[DBT], primary=True)

    again = Pipeline.create(recipe)
    again.run()
    again.raise_from_status()
    assert _read(graph_file) == (merged, versions)

    # Closing the sink rebuilt the browse index `datahub lite ls` walks.
    lite = SqliteLite(SqliteLiteConfig(file=str(graph_file), read_only=True))
    try:
        assert [entry.name for entry in lite.ls("/")] == ["databases"]
    finally:
        lite.close()


def test_a_patch_that_cannot_be_applied_is_a_sink_failure(tmp_path: Path) -> None:
    into_a_list = MetadataChangeProposalClass(  # datasetProperties.tags is an array nobody keys
        entityType="dataset",
        entityUrn=PG,
        changeType=ChangeTypeClass.PATCH,
        aspectName="datasetProperties",
        aspect=GenericAspectClass(
            value=json.dumps([{"op": "add", "path": "/tags/nightly", "value": "nightly"}]).encode(),
            contentType=JSON_PATCH_CONTENT_TYPE,
        ),
    )
    pipeline = Pipeline.create(_recipe(tmp_path, [into_a_list, *_dbt_patches()]))
    pipeline.run()

    report = pipeline.sink.get_report()
    assert report.total_records_written == 3
    assert len(report.failures) == 1
    assert f"cannot apply the PATCH on {PG}: datasetProperties: cannot add /tags/nightly" in report.failures[0]
    with pytest.raises(PipelineExecutionError, match="Sink reported errors"):
        pipeline.raise_from_status()


def test_records_are_written_in_batches_and_a_patch_sees_the_upsert_before_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The postgres source's aspects and dbt's patches of them in one recipe: one transaction, merged in order."""
    transactions: list[int] = []
    real = LiteGraph.write_batch

    def counted(graph: LiteGraph, batch: Any) -> dict[int, str]:
        transactions.append(len(batch))
        return real(graph, batch)

    monkeypatch.setattr(LiteGraph, "write_batch", counted)
    lineage = UpstreamLineageClass(upstreams=[UpstreamClass(dataset=RAW, type="TRANSFORMED")])
    tags = GlobalTagsClass(tags=[TagAssociationClass("urn:li:tag:pii")])
    first = MetadataChangeProposalWrapper.construct_many(PG, [lineage, tags])
    pipeline = Pipeline.create(_recipe(tmp_path, [*first, *_dbt_patches()]))
    pipeline.run()
    pipeline.raise_from_status()

    merged, _ = _read(tmp_path / "graph.db")
    table: Any = merged[PG]
    assert [u.dataset for u in table["upstreamLineage"].upstreams] == [RAW, DBT]
    assert [t.tag for t in table["globalTags"].tags] == ["urn:li:tag:pii", "urn:li:tag:gold"]
    assert transactions == [5] and pipeline.sink.get_report().total_records_written == 5


def test_datahub_ingest_cli_runs_a_recipe_with_the_sink(tmp_path: Path) -> None:
    recipe = tmp_path / "recipe.yml"
    recipe.write_text(yaml.safe_dump(_recipe(tmp_path, _dbt_patches())))
    done = subprocess.run(
        [str(DATAHUB_CLI), "ingest", "-c", str(recipe)],
        env={**os.environ, "HOME": str(tmp_path), "DATAHUB_TELEMETRY_ENABLED": "false"},
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr

    merged, _ = _read(tmp_path / "graph.db")
    table: Any = merged[PG]
    assert [u.dataset for u in table["upstreamLineage"].upstreams] == [DBT]
    assert [t.tag for t in table["globalTags"].tags] == ["urn:li:tag:gold"]
