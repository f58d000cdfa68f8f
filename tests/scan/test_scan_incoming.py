"""The far-side links a rescan keeps from the last scan: brought up to date by what changed, asked or not."""

from __future__ import annotations

from contextlib import closing

import datahub.metadata.schema_classes as dh
from datahub.emitter.mcp import MetadataChangeProposalWrapper

from recall_dagster.kept.incoming import KnownIncoming
from recall_dagster.kept.links import Links
from recall_dagster.graph import LiteGraph

ASSERTS = "Asserts"


def _asserting(assertion: str, dataset: str) -> MetadataChangeProposalWrapper:
    return MetadataChangeProposalWrapper(entityUrn=assertion, aspect=dh.AssertionInfoClass(
        type="DATASET", datasetAssertion=dh.DatasetAssertionInfoClass(
            dataset=dataset, scope="DATASET_ROWS", operator="NOT_NULL")))


def test_links_written_since_are_kept_for_datasets_nobody_asked_about_again(estate) -> None:
    """An assertion added to a dataset and one moved off it while no model read the dataset again: the kept
    answer is the graph's answer now, so the scan that reads the dataset next sees both (a dataset a model
    stops reading and reads again later would otherwise come back with its old tests)."""
    with closing(LiteGraph(estate("general"))) as graph:
        datasets = graph.list_urns("dataset")
        before = graph.related(datasets, ASSERTS, "incoming")
        tested = next(d for d in datasets if before[d])
        other = next(d for d in datasets if d != tested)
        known = {(ASSERTS, d): tuple(found) for d, found in before.items()}
        moved, added = before[tested][0], "urn:li:assertion:added_since"
        graph.emit_mcps([_asserting(moved, other), _asserting(added, tested)])
        now = graph.related(datasets, ASSERTS, "incoming")
        assert now[tested] != before[tested] and now[other] != before[other]

        untouched = {**known, **KnownIncoming(graph, Links({}, {}, known), changed=[moved, added]).changes()}
        assert untouched == {(ASSERTS, d): tuple(found) for d, found in now.items()}

        asked = KnownIncoming(graph, Links({}, {}, known), changed=[moved, added])
        assert asked.related([tested, other], ASSERTS, "incoming") == {tested: now[tested], other: now[other]}
        assert {**known, **asked.changes()} == untouched


def test_a_target_the_last_scan_never_asked_about_is_asked_of_the_graph(estate) -> None:
    with closing(LiteGraph(estate("general"))) as graph:
        datasets = graph.list_urns("dataset")
        answers = graph.related(datasets, ASSERTS, "incoming")
        tested = next(d for d in datasets if answers[d])
        known = KnownIncoming(graph, Links({}, {}, {}), changed=[])
        assert known.related([tested], ASSERTS, "incoming") == {tested: answers[tested]}
        assert known.changes() == {(ASSERTS, tested): tuple(answers[tested])}
