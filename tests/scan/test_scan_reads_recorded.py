"""A closure's record of what it read is what the resolver read for it.

A rescan reads a model again when an entity its closure read has changed (``ModelClosure.read``), and keeps
the closure otherwise. An entity the resolver reads for a model but leaves out of the record is a change the
rescan would miss, the kept closure staying stale (as a renamed Dagster flow once did). So each model of
estates written by DataHub's own sources is resolved alone through a graph that notes every entity whose
aspects were read, and the record is held to it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import pytest
from datahub.api.entities.datajob import DataFlow, DataJob
from datahub.metadata.schema_classes import _Aspect
from datahub.utilities.urns.dataset_urn import DatasetUrn

from recall_dagster.config.load import load
from recall_dagster.estate.resolve import resolve
from recall_dagster.graph import LiteGraph
from recall_dagster.graph.overlay import Overlay
from recall_dagster.graph.port import AspectMap, AspectT, Direction, MetadataGraph
from tests.graph.graph_estate import make_estate
from tests.scan.scan_estates import ingest


class Noting(Overlay):
    """Every entity whose aspects were read, and every source an incoming link was answered with (a rescan
    follows those through the links it keeps, not through the record)."""

    def __init__(self, graph: MetadataGraph) -> None:
        super().__init__(graph)
        self.read: set[str] = set()
        self.far: set[str] = set()

    def get_aspects(self, urns: Sequence[str], aspects: Sequence[type[_Aspect]] | None = None) -> AspectMap:
        self.read.update(urns)
        return super().get_aspects(urns, aspects)

    def timeseries(self, urns: Sequence[str], aspect: type[AspectT], limit: int = 100) -> dict[str, list[AspectT]]:
        self.read.update(urns)
        return super().timeseries(urns, aspect, limit)

    def timeseries_values(self, urns: Sequence[str], aspect: type[_Aspect], paths: Sequence[str],
                          limit: int = 100) -> dict[str, list[tuple[Any, ...]]]:
        self.read.update(urns)
        return super().timeseries_values(urns, aspect, paths, limit)

    def related(self, urns: Sequence[str], relationship: str, direction: Direction = "outgoing") -> dict[str, list[str]]:
        found = super().related(urns, relationship, direction)
        if direction == "incoming":
            self.far.update(s for sources in found.values() for s in sources)
        return found


def _written_by_dagster(db: Path) -> Path:
    """The graph estate, with a Dagster job (through DataHub's Dagster plugin) writing the mart."""
    graph = LiteGraph(str(db))
    try:
        graph.emit_mcps(make_estate().mcps()).raise_if_failed("estate")
        flow = DataFlow(orchestrator="dagster", id="defs/dbt_build", env="PROD", name="dbt_build")
        op = DataJob(id="defs/dbt_warehouse", flow_urn=flow.urn, name="dbt_warehouse")
        op.outlets = [DatasetUrn.from_string(make_estate().mart)]
        graph.emit_mcps([*flow.generate_mcp(), *op.generate_mcp()]).raise_if_failed("dagster")
    finally:
        graph.close()
    return db


STOCK = str(Path(__file__).parents[1] / "foreign" / "fixtures" / "estate_stock.json")  # DataHub's sources' shapes


@pytest.mark.parametrize("estate", [STOCK, "estate_general.json", "estate_healthy.json", "dagster"])
def test_a_closure_records_every_entity_the_resolver_read_for_it(tmp_path: Path, estate: str) -> None:
    db = _written_by_dagster(tmp_path / "g.db") if estate == "dagster" else ingest(tmp_path / "g.db", estate)
    graph, options = LiteGraph(str(db)), load().scan.resolve
    try:
        models = graph.list_urns("mlModel")
        assert models
        for model in models:
            noting = Noting(graph)
            [closure] = resolve(noting, options, candidates=[model],
                                model_urns=[model]).closures
            missed = noting.read - closure.read - noting.far
            assert missed == set(), f"{model}: read, not recorded"
            assert closure.read <= noting.read | noting.far, f"{model}: recorded, never read"
    finally:
        graph.close()
