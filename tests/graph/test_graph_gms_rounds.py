"""Over GMS a scan asks in rounds of batched calls: its requests grow with closure depth (and the pages of a
thousand events a history takes), not with the estate's entities, as a walk asking once per node does."""

from __future__ import annotations

import json
from contextlib import closing

from datahub.emitter.serialization_helper import pre_json_transform

from benchmarks.synthetic_estate import NOW, Shape, estate
from recall_dagster.graph import GmsGraph
from recall_dagster.kept.baselines import MemoryStateStore
from recall_dagster.config.load import load
from recall_dagster.scan import run_scan
from tests.writeback.wb_support import WritebackGms, serve


def _scan_over_gms(models: int) -> tuple[int, int]:
    """(requests the scan made, entities its closures hold) for the synthetic estate of ``models`` models."""
    fake = WritebackGms()
    fake._ingest([
        {"entityUrn": m.entityUrn, "aspectName": m.aspectName,
         "aspect": {"value": json.dumps(pre_json_transform(m.aspect.to_obj())), "contentType": "application/json"}}
        for m in estate(Shape(models=models))
    ])
    with serve(fake) as server, closing(GmsGraph(server.url, retries=0)) as gms:
        server.seen.clear()
        result = run_scan(gms, load().scan, MemoryStateStore(), scanned_at_ms=NOW)
        asked = len(server.seen)
    held = {u for m in result.models for u in (m.closure.urn, *m.closure.datasets, *(f.urn for f in m.closure.features))}
    assert len(result.models) == models
    return asked, len(held)


def test_three_times_the_estate_costs_a_few_more_pages_not_three_times_the_requests() -> None:
    few, few_entities = _scan_over_gms(30)
    many, many_entities = _scan_over_gms(90)
    assert many_entities >= 3 * few_entities - 10
    assert many < 1.5 * few, f"{few} requests for 30 models, {many} for 90"
    assert many < many_entities / 20, "far fewer requests than entities: no call per node"
