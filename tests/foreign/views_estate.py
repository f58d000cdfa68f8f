"""A foreign estate whose warehouse source ingests views with their lineage beside DataHub's dbt source.

The team's dbt models keep dbt's default materialization, views, over two tables their backend loads::

    raw.orders     -> staging.stg_orders     \\
                                              -> marts.customer_orders (the churn model's features and training)
    raw.customers  -> staging.stg_customers  /

Each source writes what it writes on its own run, in the shapes DataHub 1.7's dbt source and its SQL sources
write (measured on Postgres):

* the warehouse source (``include_view_lineage``, on by default): each table and view, a view's definition
  and its lineage to the tables it selects from (``VIEW`` edges, with column lineage);
* the dbt source (defaults: ``incremental_lineage``, no ``siblings`` without a server to keep them): a node
  per model and source, a model reading its parents' warehouse tables and a source node a ``COPY`` of its
  table; on each model's warehouse view, a ``COPY`` edge from its dbt node as a PATCH (made here by the
  dbt source's own helper), merged beside the view's own lineage;
* the mlflow and feast sources: the model version, its training run and its features.

Recall's Lite sink applies the PATCH the way a GMS does; on a GMS, DataHub's sibling hook also joins every
dbt node to its warehouse twin (``gms=True``). A healthy estate has the mart described in dbt and its dbt test on
``stg_orders.amount`` passing; ``documented`` and ``test_passes`` take either away.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import datahub.metadata.schema_classes as dh
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.ingestion.api.incremental_lineage_helper import convert_upstream_lineage_to_patch
from datahub.ingestion.run.pipeline import Pipeline
from datahub.ingestion.sink.file import write_metadata_file

from recall_dagster.recipes import LITE_SINK

LOADED_MS = 1_748_728_800_000  # 2025-05-31T22:00Z: the backend's last load, and dbt's run after it
TRAINED_MS = 1_748_563_200_000  # 2025-05-30T00:00Z
ALICE = "urn:li:corpuser:alice"
GROUP = "urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,churn_model,PROD)"
MODEL = "urn:li:mlModel:(urn:li:dataPlatform:mlflow,churn_model_1,PROD)"
RUN = "urn:li:dataProcessInstance:shop-churn-run-1"
ENDPOINT = "urn:li:mlModelDeployment:(urn:li:dataPlatform:sagemaker,churn-endpoint,PROD)"
TEST = "urn:li:assertion:shop-not-null-stg-orders-amount"

COLUMNS = {
    "raw.orders": ("order_id", "customer_id", "amount"),
    "raw.customers": ("customer_id", "signed_up_at"),
    "staging.stg_orders": ("order_id", "customer_id", "amount"),
    "staging.stg_customers": ("customer_id", "signed_up_at"),
    "marts.customer_orders": ("customer_id", "order_count", "total_amount"),
}
# Each model: the tables it selects from, and each of its columns -> (table, column) it is computed from.
MODELS: dict[str, tuple[tuple[str, ...], dict[str, tuple[tuple[str, str], ...]]]] = {
    "staging.stg_orders": (("raw.orders",), {c: (("raw.orders", c),) for c in COLUMNS["raw.orders"]}),
    "staging.stg_customers": (("raw.customers",), {c: (("raw.customers", c),) for c in COLUMNS["raw.customers"]}),
    "marts.customer_orders": (("staging.stg_orders", "staging.stg_customers"), {
        "customer_id": (("staging.stg_customers", "customer_id"), ("staging.stg_orders", "customer_id")),
        "order_count": (("staging.stg_orders", "order_id"),),
        "total_amount": (("staging.stg_orders", "amount"),),
    }),
}
SOURCES = ("raw.orders", "raw.customers")
# What the team writes down in dbt: the mart's meaning, which is not any one parent's.
DESCRIBED = {"marts.customer_orders": "Orders per customer: the churn model's features"}


def warehouse(name: str) -> str:
    return f"urn:li:dataset:(urn:li:dataPlatform:postgres,shop.{name},PROD)"


def dbt(name: str) -> str:
    return f"urn:li:dataset:(urn:li:dataPlatform:dbt,shop.{name},PROD)"


def _field(urn: str, column: str) -> str:
    return f"urn:li:schemaField:({urn},{column})"


def _mcps(urn: str, *aspects: Any) -> list[MetadataChangeProposalWrapper]:
    return list(MetadataChangeProposalWrapper.construct_many(urn, list(aspects)))


def _schema(urn: str, name: str) -> dh.SchemaMetadataClass:
    return dh.SchemaMetadataClass(
        schemaName=name, platform=urn.split(",")[0].split("(")[1], version=0, hash="",
        platformSchema=dh.OtherSchemaClass(rawSchema=""),
        fields=[dh.SchemaFieldClass(fieldPath=c, type=dh.SchemaFieldDataTypeClass(dh.NumberTypeClass()),
                                    nativeDataType="numeric") for c in COLUMNS[name]],
    )


def _lineage(urn: str, kind: str, reads: dict[str, tuple[tuple[str, str], ...]], named: Callable[[str], str],
             upstreams: tuple[str, ...]) -> dh.UpstreamLineageClass:
    """``urn`` computed from ``upstreams`` (names, made URNs by ``named``), column by column as ``reads`` says."""
    return dh.UpstreamLineageClass(
        upstreams=[dh.UpstreamClass(dataset=named(u), type=kind) for u in upstreams],
        fineGrainedLineages=[dh.FineGrainedLineageClass(
            upstreamType="FIELD_SET", downstreamType="FIELD", upstreams=[_field(named(t), c) for t, c in ups],
            downstreams=[_field(urn, ours)]) for ours, ups in reads.items()],
    )


def _copy(urn: str, of: str, name: str) -> dh.UpstreamLineageClass:
    """``urn`` a COPY of its twin ``of``, column for column, as the dbt source links a node and its table."""
    return dh.UpstreamLineageClass(
        upstreams=[dh.UpstreamClass(dataset=of, type="COPY")],
        fineGrainedLineages=[dh.FineGrainedLineageClass(
            upstreamType="FIELD_SET", downstreamType="FIELD", upstreams=[_field(of, c)], downstreams=[_field(urn, c)])
            for c in COLUMNS[name]],
    )


def _read_by_dbt(parent: str) -> str:
    """What a dbt model's lineage names a parent by: a model's warehouse table, a source's dbt node."""
    return dbt(parent) if parent in SOURCES else warehouse(parent)


def _warehouse_source() -> list[MetadataChangeProposalWrapper]:
    out = []
    for name in SOURCES:
        urn = warehouse(name)
        out += _mcps(urn, dh.DatasetPropertiesClass(name=name.split(".")[-1]), _schema(urn, name),
                     dh.SubTypesClass(typeNames=["Table"]))
    for name, (parents, reads) in MODELS.items():
        urn = warehouse(name)
        out += _mcps(urn, dh.DatasetPropertiesClass(name=name.split(".")[-1]), _schema(urn, name),
                     dh.SubTypesClass(typeNames=["View"]),
                     dh.ViewPropertiesClass(materialized=False, viewLogic=f"SELECT ... FROM {', '.join(parents)}",
                                            viewLanguage="SQL"),
                     _lineage(urn, "VIEW", reads, warehouse, parents))
    return out


def _dbt_source(documented: bool, test_passes: bool) -> list[Any]:
    out: list[Any] = []
    owned = dh.OwnershipClass(owners=[dh.OwnerClass(owner=ALICE, type="DATAOWNER")])
    for name in SOURCES:
        node = dbt(name)
        out += _mcps(node, dh.DatasetPropertiesClass(
            name=name.split(".")[-1], customProperties={"node_type": "source", "dbt_unique_id": f"source.shop.{name}"}),
            _schema(node, name), dh.SubTypesClass(typeNames=["Source"]), owned, _copy(node, warehouse(name), name))
    for name, (parents, reads) in MODELS.items():
        node, table = dbt(name), warehouse(name)
        short = name.split(".")[-1]
        out += _mcps(node, dh.DatasetPropertiesClass(
            name=short, description=DESCRIBED.get(name) if documented else None,
            customProperties={"node_type": "model", "materialization": "view", "dbt_unique_id": f"model.shop.{short}"}),
            _schema(node, name), dh.SubTypesClass(typeNames=["Model"]), owned,
            dh.ViewPropertiesClass(materialized=False, viewLogic="select ...", viewLanguage="SQL"),
            _lineage(node, "TRANSFORMED", reads, _read_by_dbt, parents),
            dh.OperationClass(timestampMillis=LOADED_MS, lastUpdatedTimestamp=LOADED_MS, operationType="CREATE",
                              actor="urn:li:corpuser:dbt"))
        out.append(convert_upstream_lineage_to_patch(table, _copy(table, node, name), None).metadata)
    for name in SOURCES:
        out += _mcps(warehouse(name), dh.OperationClass(
            timestampMillis=LOADED_MS, lastUpdatedTimestamp=LOADED_MS, operationType="INSERT",
            actor="urn:li:corpuser:loader"))
    on = dbt("staging.stg_orders")
    out += _mcps(TEST, dh.AssertionInfoClass(
        type="CUSTOM", source=dh.AssertionSourceClass(type="EXTERNAL"),
        customProperties={"dbt_unique_id": "test.shop.not_null_stg_orders_amount"},
        customAssertion=dh.CustomAssertionInfoClass(
            type="dbt", entity=on, field=_field(on, "amount"), fields=[_field(on, "amount")], scope="DATASET_COLUMN",
            operator="NOT_NULL", aggregation="_NATIVE_", nativeType="not_null_stg_orders_amount")))
    out += _mcps(TEST, dh.AssertionRunEventClass(
        timestampMillis=LOADED_MS, runId="inv-1", asserteeUrn=on, assertionUrn=TEST, status="COMPLETE",
        result=dh.AssertionResultClass(type="SUCCESS" if test_passes else "FAILURE",
                                       nativeResults={} if test_passes else {"failures": "3"})))
    return out


def _siblings() -> list[MetadataChangeProposalWrapper]:
    """What DataHub's sibling hook keeps on a GMS: a model's dbt node primary, a source's warehouse table."""
    out = []
    for name in (*SOURCES, *MODELS):
        dbt_primary = name in MODELS
        out += _mcps(dbt(name), dh.SiblingsClass(siblings=[warehouse(name)], primary=dbt_primary))
        out += _mcps(warehouse(name), dh.SiblingsClass(siblings=[dbt(name)], primary=not dbt_primary))
    return out


def _ml_sources() -> list[MetadataChangeProposalWrapper]:
    mart = warehouse("marts.customer_orders")
    features = [f"urn:li:mlFeature:(customer_stats,{c})" for c in ("order_count", "total_amount")]
    return [
        *_mcps(ALICE, dh.CorpUserInfoClass(active=True, displayName="Alice Ng", email="alice@shop.example")),
        *_mcps(GROUP, dh.MLModelGroupPropertiesClass(name="churn_model", customProperties={}),
               dh.OwnershipClass(owners=[dh.OwnerClass(owner=ALICE, type="TECHNICAL_OWNER")])),
        *_mcps(RUN, dh.DataProcessInstancePropertiesClass(
            name="churn-train-1", type="BATCH_AD_HOC", created=dh.AuditStampClass(TRAINED_MS, ALICE),
            customProperties={}), dh.DataProcessInstanceInputClass(inputs=[mart])),
        *_mcps(RUN, dh.DataProcessInstanceRunEventClass(timestampMillis=TRAINED_MS, status="STARTED")),
        *_mcps(RUN, dh.DataProcessInstanceRunEventClass(
            timestampMillis=TRAINED_MS + 300_000, status="COMPLETE", durationMillis=300_000,
            result=dh.DataProcessInstanceRunResultClass(type="SUCCESS", nativeResultType="mlflow"))),
        *_mcps(MODEL, dh.MLModelPropertiesClass(
            name="churn_model_1", customProperties={"status": "READY"}, version=dh.VersionTagClass(versionTag="1"),
            trainingJobs=[RUN], groups=[GROUP], mlFeatures=features, deployments=[ENDPOINT]),
            dh.VersionPropertiesClass(versionSet="urn:li:versionSet:(mlflow_churn_model_PROD,mlModel)",
                                      version=dh.VersionTagClass(versionTag="1"), sortId="0000000001",
                                      aliases=[dh.VersionTagClass(versionTag="champion")]),
            dh.GlobalTagsClass(tags=[dh.TagAssociationClass(tag="urn:li:tag:mlflow_production")])),
        *_mcps(ENDPOINT, dh.MLModelDeploymentPropertiesClass(
            customProperties={}, version=dh.VersionTagClass(versionTag="1"), status="IN_SERVICE")),
        *_mcps("urn:li:mlFeatureTable:(urn:li:dataPlatform:feast,customer_stats)", dh.MLFeatureTablePropertiesClass(
            customProperties={}, mlFeatures=features, mlPrimaryKeys=[])),
        *(m for f in features for m in _mcps(f, dh.MLFeaturePropertiesClass(
            dataType="CONTINUOUS", sources=[mart], customProperties={}))),
    ]


def ingest_estate(folder: Path, *, gms: bool, documented: bool = True, test_passes: bool = True) -> Path:
    """The estate in a Lite file under ``folder``, each source's records loaded in turn through Recall's Lite
    sink as the team's recipes do (``datahub ingest``): the warehouse source, then dbt's, then the ML sources."""
    dbt_run = _dbt_source(documented, test_passes) + (_siblings() if gms else [])
    runs = {"warehouse": _warehouse_source(), "dbt": dbt_run, "ml": _ml_sources()}
    graph = folder / "shop.db"
    for name, records in runs.items():
        path = folder / f"{name}.json"
        write_metadata_file(path, records)
        pipeline = Pipeline.create({
            "source": {"type": "file", "config": {"path": str(path)}},
            "sink": {"type": LITE_SINK, "config": {"type": "sqlite", "config": {"file": str(graph)}}},
        })
        pipeline.run()
        pipeline.raise_from_status()
    return graph
