"""Write-back on DataHub Lite: idempotent re-runs, tier changes, and a full stand-down after heal.

Real scans over a hand-written estate (the scan tests' healthy one, broken by
``estate_break.json``), healed by writing fixed aspects the way dbt and the
training pipeline would.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata.schema_classes import (
    AssertionRunEventClass,
    DocumentInfoClass,
    GlobalTagsClass,
    IncidentInfoClass,
    StructuredPropertiesClass,
    TagAssociationClass,
)
from scan_estates import SCAN_AT_MS
from wb_support import BREAK, HEAL_DATA, HEAL_TRAINING, MODEL, USER_STATS, lite_estate, scan

from recall_dagster.graph import LiteGraph
from recall_dagster.kept.baselines import MemoryStateStore
from recall_dagster.scan import run_scan
from recall_dagster.writeback.report import WritebackReport
from recall_dagster.writeback.run import write_back
from recall_dagster.writeback.keys import LAST_SCANNED, RISK_SCORE, RISK_TIER, document_urn, incident_urn
from recall_dagster.writeback.state import read_state

T1, T2, T3, T4 = (1_750_000_000_000 + i * 3_600_000 for i in range(4))
COST_CENTER = "urn:li:structuredProperty:io.acme.costCenter"
SKEW = incident_urn("training_serving_skew", USER_STATS)
FAILING = incident_urn("failing_assertion", "urn:li:assertion:user-stats-not-null")


def _snapshot(db: Path) -> dict[tuple[str, str], object]:
    """Every current aspect but events, with Recall's scan time blanked: what a re-run must not change."""
    with closing(sqlite3.connect(db)) as conn:
        rows = conn.execute("SELECT urn, aspect_name, metadata FROM metadata_aspect_v2 WHERE version = 0").fetchall()
    snapshot = {}
    for urn, aspect, text in rows:
        if aspect in ("assertionRunEvent", "operation"):
            continue
        value = json.loads(text)
        for prop in value.get("properties", []) if aspect == "structuredProperties" else []:
            if prop["propertyUrn"] == LAST_SCANNED:
                prop["values"] = ["<scan time>"]
        snapshot[(urn, aspect)] = value
    return snapshot


def _scan_and_write(db: Path, recall_config, settings, wb_config, now_ms: int) -> WritebackReport:
    with closing(LiteGraph(db)) as graph:
        report = write_back(graph, scan(graph, recall_config), settings, wb_config, now_ms)
    assert report.ok, report.to_json()
    return report


def runs(graph: LiteGraph) -> int:
    """How many runs Recall's assertions have recorded in all."""
    return sum(len(e) for e in graph.timeseries(list(_latest_runs(graph)), AssertionRunEventClass).values())


def _latest_runs(graph: LiteGraph) -> dict[str, str]:
    """Recall's assertions and the result of each one's latest run."""
    urns = read_state(graph, [], []).assertions
    latest = {u: events[0] for u, events in graph.timeseries(urns, AssertionRunEventClass, limit=1).items()}
    return {u: event.result.type for u, event in latest.items()}  # type: ignore[attr-defined]


def _incidents(graph: LiteGraph) -> dict[str, IncidentInfoClass]:
    state = read_state(graph, [], [])
    return {urn: state.aspect(urn, IncidentInfoClass) for urn in state.incidents}  # type: ignore[misc]


def _tags(graph: LiteGraph) -> list[str]:
    tags = graph.get_aspects([MODEL], [GlobalTagsClass])[MODEL].get("globalTags")
    return [t.tag for t in tags.tags] if isinstance(tags, GlobalTagsClass) else []


def _properties(graph: LiteGraph) -> dict[str, list]:
    found = graph.get_aspects([MODEL], [StructuredPropertiesClass])[MODEL]["structuredProperties"]
    return {p.propertyUrn: p.values for p in found.properties}  # type: ignore[attr-defined]


def _document(graph: LiteGraph) -> DocumentInfoClass:
    urn = document_urn(MODEL)
    return graph.get_aspects([urn], [DocumentInfoClass])[urn]["documentInfo"]  # type: ignore[return-value]


def test_first_write_covers_every_path(lite_path, recall_config, settings, wb_config) -> None:
    report = _scan_and_write(lite_path, recall_config, settings, wb_config, T1)

    assert {path: c["landed"] for path, c in report.counts().items()} == {
        "property": 4,  # three definitions, one model's values
        "tag": 4,  # three tag entities (two tiers, the managed tag), the model's tags
        "assertion": 9,  # skew, failing assertion, blast radius: the managed tag, info and a FAILURE run each
        "incident": 4,  # the two CRITICAL findings: the managed tag and info each
        "document": 2,  # the managed tag and the pre-mortem
    }
    with closing(LiteGraph(lite_path)) as graph:
        assert _tags(graph) == ["urn:li:tag:mlflow_production", "urn:li:tag:recall:critical"]
        properties = _properties(graph)
        assert properties[COST_CENTER] == ["growth"]  # someone else's property survives
        assert properties[RISK_SCORE] == [70.0] and properties[RISK_TIER] == ["CRITICAL"]
        assert set(_latest_runs(graph).values()) == {"FAILURE"} and len(_latest_runs(graph)) == 3
        incidents = _incidents(graph)
        assert set(incidents) == {SKEW, FAILING}
        assert all(i.status.state == "ACTIVE" and i.entities == [MODEL] for i in incidents.values())
        document = _document(graph)
        assert [a.asset for a in document.relatedAssets or []] == [MODEL, USER_STATS]
        assert "Owners of proj.features.user_stats: carol" in document.contents.text
        assert "What to do" in document.contents.text


def test_one_scan_written_twice_records_each_evaluation_once_and_a_later_scan_adds_its_own(
    lite_path, recall_config, settings, wb_config
) -> None:
    _scan_and_write(lite_path, recall_config, settings, wb_config, T1)
    before = _snapshot(lite_path)
    with closing(LiteGraph(lite_path)) as graph:
        runs_before = runs(graph)

    again = _scan_and_write(lite_path, recall_config, settings, wb_config, T2)

    assert again.plan is not None
    assert {(w.path, w.aspect_name) for w in again.plan.writes} == {("property", "structuredProperties")}, (
        "only lastScanned moves: the scan's evaluations are recorded already"
    )
    assert _snapshot(lite_path) == before  # same entities, assertions, incidents, documents, values
    with closing(LiteGraph(lite_path)) as graph:
        assert runs(graph) == runs_before
        later = run_scan(graph, recall_config, MemoryStateStore(), scanned_at_ms=SCAN_AT_MS + 60_000)
        report = write_back(graph, later, settings, wb_config, T3)
        assert report.ok and report.plan is not None
        assert ("assertion", "assertionRunEvent") in {(w.path, w.aspect_name) for w in report.plan.writes}
        assert runs(graph) == runs_before + 3


def test_tiers_move_tags_and_heal_stands_everything_down(lite_path, recall_config, settings, wb_config) -> None:
    _scan_and_write(lite_path, recall_config, settings, wb_config, T1)

    lite_estate(lite_path, HEAL_TRAINING)  # training reads user_stats again: the skew clears
    _scan_and_write(lite_path, recall_config, settings, wb_config, T2)
    with closing(LiteGraph(lite_path)) as graph:
        assert _tags(graph) == ["urn:li:tag:mlflow_production", "urn:li:tag:recall:at-risk"]
        incidents = _incidents(graph)
        assert incidents[SKEW].status.state == "RESOLVED" and incidents[FAILING].status.state == "ACTIVE"
        assert sorted(_latest_runs(graph).values()) == ["FAILURE", "FAILURE", "SUCCESS"]

    lite_estate(lite_path, HEAL_DATA)  # the dbt test passes again: the model is healthy
    _scan_and_write(lite_path, recall_config, settings, wb_config, T3)
    with closing(LiteGraph(lite_path)) as graph:
        assert not [t for t in _tags(graph) if t.startswith("urn:li:tag:recall:")]
        assert _tags(graph) == ["urn:li:tag:mlflow_production"]
        assert {i.status.state for i in _incidents(graph).values()} == {"RESOLVED"}
        assert set(_latest_runs(graph).values()) == {"SUCCESS"}
        assert _properties(graph)[RISK_TIER] == ["HEALTHY"] and _properties(graph)[COST_CENTER] == ["growth"]
        document = _document(graph)
        assert document.status.state == "UNPUBLISHED" and document.contents.text.startswith("> Stood down")


def test_a_finding_that_returns_reopens_its_incident(lite_path, recall_config, settings, wb_config) -> None:
    _scan_and_write(lite_path, recall_config, settings, wb_config, T1)
    lite_estate(lite_path, HEAL_TRAINING, HEAL_DATA)
    _scan_and_write(lite_path, recall_config, settings, wb_config, T2)
    with closing(LiteGraph(lite_path)) as graph:
        created = _incidents(graph)[SKEW].created

    lite_estate(lite_path, BREAK)
    _scan_and_write(lite_path, recall_config, settings, wb_config, T3)

    with closing(LiteGraph(lite_path)) as graph:
        incidents = _incidents(graph)
        assert set(incidents) == {SKEW, FAILING}  # the same incidents, not new ones
        assert incidents[SKEW].status.state == "ACTIVE" and incidents[SKEW].created == created
        assert "returned" in (incidents[SKEW].status.message or "")
        assert _document(graph).status.state == "PUBLISHED"


def test_what_people_set_on_an_incident_survives_scans(lite_path, recall_config, settings, wb_config) -> None:
    _scan_and_write(lite_path, recall_config, settings, wb_config, T1)
    with closing(LiteGraph(lite_path)) as graph:
        triaged = _incidents(graph)[SKEW]
        triaged.status.stage = "INVESTIGATION"
        triaged.priority = 1
        graph.emit_mcps([MetadataChangeProposalWrapper(entityUrn=SKEW, aspect=triaged)])

    _scan_and_write(lite_path, recall_config, settings, wb_config, T2)

    with closing(LiteGraph(lite_path)) as graph:
        kept = _incidents(graph)[SKEW]
        assert kept.status.stage == "INVESTIGATION" and kept.priority == 1


def test_what_an_earlier_recall_wrote_untagged_is_found_once_by_listing_then_by_the_managed_tag(
    lite_path, recall_config, settings, wb_config
) -> None:
    _scan_and_write(lite_path, recall_config, settings, wb_config, T1)
    team = TagAssociationClass(tag="urn:li:tag:team-fraud")
    with closing(LiteGraph(lite_path)) as graph:  # as a Recall from before the managed tag left them
        owned = read_state(graph, [], [], list_owned=True)
        untagged = [*owned.assertions, *owned.incidents, *owned.documents]
        graph.emit_mcps([MetadataChangeProposalWrapper(entityUrn=u, aspect=GlobalTagsClass(tags=[team]))
                         for u in untagged])
        assert read_state(graph, [], []).incidents == ()
    (settings.state_dir / "writeback" / "capabilities.json").unlink()  # and a machine that never listed this graph

    lite_estate(lite_path, HEAL_TRAINING)  # the skew clears: its incident must be found to be resolved
    _scan_and_write(lite_path, recall_config, settings, wb_config, T2)

    with closing(LiteGraph(lite_path)) as graph:
        assert _incidents(graph)[SKEW].status.state == "RESOLVED"
        by_tag = read_state(graph, [], [])
        assert [*by_tag.assertions, *by_tag.incidents, *by_tag.documents] == untagged
        tags = graph.get_aspects([SKEW], [GlobalTagsClass])[SKEW]["globalTags"]
        assert [t.tag for t in tags.tags] == ["urn:li:tag:team-fraud", "urn:li:tag:recall:managed"]

    lite_estate(lite_path, HEAL_DATA)  # found by the tag alone now: the failing assertion's incident resolves
    _scan_and_write(lite_path, recall_config, settings, wb_config, T3)
    with closing(LiteGraph(lite_path)) as graph:
        assert {i.status.state for i in _incidents(graph).values()} == {"RESOLVED"}
