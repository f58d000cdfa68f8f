"""A rescan reads a kept closure's body only when something asks for it, and keeps the estate's column lineage
while no change alters it: what makes a rescan of a large estate cost what changed, not what is kept."""

from __future__ import annotations

import pickle
from contextlib import closing

import datahub.metadata.schema_classes as dh
from benchmarks.synthetic_estate import NOW, Shape, dataset_urn
from benchmarks.synthetic_estate import estate as synthetic
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from scan_estates import SCAN_AT_MS, exact

from recall_dagster.kept.baselines import MemoryStateStore
from recall_dagster.config.load import load
from recall_dagster.estate import ModelClosure
from recall_dagster.kept.incremental import resolve_incremental, snapshot_key
from recall_dagster.kept.closures import Kept, KeptClosure
from recall_dagster.graph import LiteGraph
from recall_dagster.scan import run_scan
from recall_dagster.kept import snapshots
from recall_dagster.kept.snapshots import SnapshotStore

HOUR = 3_600_000


def test_a_rescan_of_an_unchanged_estate_reads_no_kept_body_and_each_stands_for_its_closure(
    estate, tmp_path, monkeypatch
):
    config, baselines, state = load().scan, MemoryStateStore(), tmp_path / "state"
    bodies = []
    monkeypatch.setattr(Kept, "body", lambda self, ref: bodies.append(ref) or Kept._decode(self, ref))
    with closing(LiteGraph(estate("general"))) as graph:
        first = run_scan(graph, config, baselines, scanned_at_ms=SCAN_AT_MS, include_all=True,
                         snapshots=SnapshotStore(state))
        again = run_scan(graph, config, baselines, scanned_at_ms=SCAN_AT_MS, include_all=True,
                         snapshots=SnapshotStore(state))
    kept = [m.closure for m in again.models]
    assert kept and all(isinstance(c, KeptClosure) for c in kept)
    assert bodies == [], "a rescan that kept every verdict read bodies"
    assert exact(again) == exact(first)
    read = {m.closure.urn: m.closure for m in first.models}
    for closure in kept:
        assert closure == read[closure.urn] and read[closure.urn] == closure
        assert closure.dataset_urns == tuple(read[closure.urn].whole().datasets)
        assert closure.whole() == read[closure.urn] and type(closure.whole()) is ModelClosure
        copied = pickle.loads(pickle.dumps(closure))
        assert type(copied) is ModelClosure and copied == read[closure.urn]
    assert len(bodies) == len(kept), "each body read once, when its closure was first asked for whole"


def _schema(graph: LiteGraph, dataset: str, *, extra: bool) -> MetadataChangeProposalWrapper:
    """The dataset's schema with its first column retyped, and with ``extra`` one column more."""
    schema = graph.get_aspects([dataset], [dh.SchemaMetadataClass])[dataset][dh.SchemaMetadataClass.ASPECT_NAME]
    schema.fields[0].nativeDataType = "text" if not extra else "varchar"
    if extra:
        schema.fields.append(dh.SchemaFieldClass(
            fieldPath="added_later", type=dh.SchemaFieldDataTypeClass(dh.StringTypeClass()), nativeDataType="text"))
    return MetadataChangeProposalWrapper(entityUrn=dataset, aspect=schema)


def test_the_estate_column_lineage_is_kept_while_changes_leave_it_and_built_again_when_one_alters_it(
    estate, tmp_path
):
    """A retyped column leaves every table's columns and lineage as they were: the graph built on the first scan
    serves the rescan (its file untouched); a column added is built again.  Each rescan finds what a full scan
    finds."""
    config, baselines, state = load().scan, MemoryStateStore(), tmp_path / "state"
    with closing(LiteGraph(estate("general"))) as graph:
        first = run_scan(graph, config, baselines, scanned_at_ms=SCAN_AT_MS, include_all=True,
                         snapshots=SnapshotStore(state))
        [columns] = (state / "closures").glob("*.columns.pickle")
        built = columns.read_bytes()
        dataset = next(u for m in first.models for u, d in sorted(m.closure.datasets.items()) if d.fields)
        later = SCAN_AT_MS + HOUR
        for extra, rebuilt in ((False, False), (True, True)):
            graph.emit_mcps([_schema(graph, dataset, extra=extra)])
            later += HOUR
            rescan = run_scan(graph, config, baselines, scanned_at_ms=later, include_all=True,
                              snapshots=SnapshotStore(state))
            full = run_scan(graph, config, MemoryStateStore(baselines.baselines), scanned_at_ms=later,
                            include_all=True)
            assert rescan.rescan.mode == "incremental" and rescan.rescan.same_columns is not rebuilt
            assert exact(rescan) == exact(full)
            assert (columns.read_bytes() != built) is rebuilt


def test_the_packs_stay_few_and_a_lost_one_costs_a_full_read(tmp_path, monkeypatch):
    """Each rescan puts the bodies it read again in a pack of its own; once they lie in as many packs as the
    store allows, one save puts them all in one, and the packs no head names are gone.  A pack lost costs a
    full read, never an error; every rescan finds what a full scan finds."""
    monkeypatch.setattr(snapshots, "_PACKS_AT_MOST", 3)
    config, baselines, state = load().scan, MemoryStateStore(), tmp_path / "state"
    # each held by a few of the twenty models, not all by the same few
    changed = [dataset_urn(f"marts.f{f}_t{t}") for f, t in ((0, 0), (1, 1), (0, 2), (1, 2), (0, 1))]
    model = "urn:li:mlModel:(urn:li:dataPlatform:mlflow,model5,PROD)"
    with closing(LiteGraph(tmp_path / "estate.db")) as graph:
        graph.emit_mcps(synthetic(Shape(models=20)))
        store = SnapshotStore(state)  # one store, as a long-lived process keeps it: each save on the last
        run_scan(graph, config, baselines, scanned_at_ms=NOW, snapshots=store)
        packs = []
        for step, dataset in enumerate(changed, start=1):
            schema = graph.get_aspects([dataset], [dh.SchemaMetadataClass])[dataset][
                dh.SchemaMetadataClass.ASPECT_NAME]
            schema.fields[0].nativeDataType = f"varchar({step})"
            # and an owner who comes and goes: who reads what changes, not only what it holds
            owner = dh.OwnershipClass([dh.OwnerClass(f"urn:li:corpuser:steward{step % 2}", "DATAOWNER")])
            # a new test on the table (a link kept from its far side), a model served somewhere new (what
            # choosing it reads)
            test = dh.AssertionInfoClass(type="DATASET", datasetAssertion=dh.DatasetAssertionInfoClass(
                dataset=dataset, scope="DATASET_ROWS", operator="NOT_NULL"))
            props = graph.get_aspects([model], [dh.MLModelPropertiesClass])[model][
                dh.MLModelPropertiesClass.ASPECT_NAME]
            props.deployments = [*(props.deployments or ()),
                                f"urn:li:mlModelDeployment:(urn:li:dataPlatform:sagemaker,e{step},PROD)"]
            graph.emit_mcps([MetadataChangeProposalWrapper(entityUrn=dataset, aspect=schema),
                             MetadataChangeProposalWrapper(entityUrn=changed[0], aspect=owner),
                             MetadataChangeProposalWrapper(entityUrn=f"urn:li:assertion:added{step}", aspect=test),
                             MetadataChangeProposalWrapper(entityUrn=model, aspect=props)])
            at = NOW + step * HOUR
            rescan = run_scan(graph, config, baselines, scanned_at_ms=at, snapshots=store)
            full = run_scan(graph, config, MemoryStateStore(baselines.baselines), scanned_at_ms=at)
            assert rescan.rescan.mode == "incremental" and 0 < rescan.rescan.reread < 20
            assert exact(rescan) == exact(full)
            packs.append(len(list((state / "closures").glob("*.pack"))))
            assert _kept_links(state, graph, config) == _read_links(graph, config, at)
        assert packs == [2, 2, 3, 1, 2]
        elsewhere = run_scan(graph, config, baselines, scanned_at_ms=at, snapshots=SnapshotStore(state))
        assert elsewhere.rescan.reread == 0 and exact(elsewhere) == exact(full)
        next((state / "closures").glob("*.pack")).unlink()
        at = NOW + 6 * HOUR
        lost = run_scan(graph, config, baselines, scanned_at_ms=at, snapshots=SnapshotStore(state))
        full = run_scan(graph, config, MemoryStateStore(baselines.baselines), scanned_at_ms=at)
        assert lost.rescan.mode == "full" and exact(lost) == exact(full)
        assert len(list((state / "closures").glob("*.pack"))) == 1


def _plain_links(links) -> tuple:  # noqa: ANN001 - Links
    """Links as sets: the order models were added in says nothing."""
    links = links.whole()
    return (dict(links.models_read), {e: set(m) for e, m in links.readers_of.items()}, dict(links.asked))


def _kept_links(state, graph, config) -> tuple:  # noqa: ANN001
    """The links as a new process reads them back."""
    key = snapshot_key(graph.location, config.resolve, False)
    return _plain_links(SnapshotStore(state).load(key).links())


def _read_links(graph, config, at: int) -> tuple:  # noqa: ANN001
    """The links a full read of the graph makes."""
    _, snapshot, _ = resolve_incremental(graph, config.resolve, include_all=False, previous=None)
    return _plain_links(snapshot.links())
