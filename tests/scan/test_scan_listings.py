"""A rescan lists models, groups and assertions from the last scan's lists and what changed since, and gets
exactly what listing the graph again gives: entities added, marked removed, brought back, or left alone."""

from __future__ import annotations

from contextlib import closing

import datahub.metadata.schema_classes as dh
from datahub.emitter.mcp import MetadataChangeProposalWrapper

from recall_dagster.estate.listings import KnownListings
from recall_dagster.graph import LiteGraph

TYPES = ("mlModel", "mlModelGroup", "assertion", "dataset")


def _listed(graph: LiteGraph, kept: tuple[str, dict] | None) -> tuple[KnownListings, dict[str, list[str]]]:
    listing = KnownListings(graph, kept)
    listing.changes_since(kept[0] if kept else None)
    return listing, {t: listing.list_urns(t) for t in TYPES}


def test_kept_lists_brought_up_to_date_are_the_graphs_lists(estate) -> None:
    with closing(LiteGraph(estate("general"))) as graph:
        first, lists = _listed(graph, None)
        assert all(lists[t] == graph.list_urns(t) for t in TYPES) and lists["assertion"] and lists["mlModel"]
        kept = first.listings()
        assert kept is not None and kept[1] == {t: tuple(u) for t, u in lists.items()}

        same, unchanged = _listed(graph, kept)
        assert unchanged == lists and same.listings() == kept  # nothing changed: nothing to write

        model, assertion, dataset = lists["mlModel"][0], lists["assertion"][0], lists["dataset"][0]
        new_model = "urn:li:mlModel:(urn:li:dataPlatform:mlflow,a_new_model,PROD)"
        new_assertion = "urn:li:assertion:a_new_test"
        graph.emit_mcps([
            MetadataChangeProposalWrapper(entityUrn=model, aspect=dh.StatusClass(removed=True)),
            MetadataChangeProposalWrapper(entityUrn=assertion, aspect=dh.StatusClass(removed=True)),
            MetadataChangeProposalWrapper(entityUrn=new_model, aspect=dh.MLModelPropertiesClass(name="a_new_model")),
            MetadataChangeProposalWrapper(entityUrn=new_assertion, aspect=dh.AssertionInfoClass(
                type="DATASET", datasetAssertion=dh.DatasetAssertionInfoClass(
                    dataset=dataset, scope="DATASET_ROWS", operator="NOT_NULL"))),
        ])
        moved, now = _listed(graph, kept)
        assert now == {t: graph.list_urns(t) for t in TYPES}
        assert model not in now["mlModel"] and new_model in now["mlModel"]
        assert assertion not in now["assertion"] and new_assertion in now["assertion"]

        graph.emit_mcps([MetadataChangeProposalWrapper(entityUrn=model, aspect=dh.StatusClass(removed=False))])
        _, back = _listed(graph, moved.listings())
        assert back == {t: graph.list_urns(t) for t in TYPES} and model in back["mlModel"]

        _, elsewhere = _listed(graph, ("a token of another file", kept[1]))
        assert elsewhere == back  # lists kept at another token are not trusted: the graph lists again
