"""A synthetic ML estate for the benchmarks, any size, the same proposals for the same shape.

Models come in families that share their feature tables.  Each table is fed
by a chain of datasets (raw first, the mart last; a mart also joins the next
table's chain), and every dataset has a schema, properties, an owner, its
operations and one not-null assertion with its run history.  Each model has a
training run reading the marts behind its features and a live deployment.
A few datasets are stale, a few assertions failing and one owner gone, so the
detectors have findings to report and the scorer something to rank.

Every timestamp derives from the fixed :data:`NOW` and every proposal carries
system metadata observed then, so the Lite file is the same whenever it is built.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import datahub.metadata.schema_classes as dh
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata.schema_classes import AssertionRunEventClass, OperationClass, _Aspect

from recall_dagster.estate.parse import RUN_FIELDS
from recall_dagster.graph import MetadataGraph

NOW = 1_767_225_600_000  # 2026-01-01T00:00:00Z
HOUR = 3_600_000
DAY = 24 * HOUR
_OBSERVED = dh.SystemMetadataClass(lastObserved=NOW, runId="synthetic-estate")
_PEOPLE = [f"urn:li:corpuser:owner{i}" for i in range(20)]
_GONE = _PEOPLE[-1]  # marked inactive: the datasets it owns alone have nobody to call
_STALE_EVERY = 31  # every 31st dataset was last updated ten days ago
_FAILING_EVERY = 23  # every 23rd assertion failed its latest run


@dataclass(frozen=True)
class Shape:
    """How many of everything; counts other than ``models`` are per family, per table or per dataset."""

    models: int
    models_per_family: int = 10
    tables_per_family: int = 3
    features_per_table: int = 12
    features_per_model: int = 10
    depth: int = 6  # datasets in a table's chain, raw to mart
    operations: int = 3  # operation events per dataset
    assertion_runs: int = 20  # run events per dataset's assertion

    @property
    def families(self) -> int:
        return -(-self.models // self.models_per_family)


def dataset_urn(name: str) -> str:
    return f"urn:li:dataset:(urn:li:dataPlatform:postgres,warehouse.{name},PROD)"


def _mcp(urn: str, aspect: _Aspect) -> MetadataChangeProposalWrapper:
    return MetadataChangeProposalWrapper(entityUrn=urn, aspect=aspect, systemMetadata=_OBSERVED)


def _schema(name: str, columns: list[str]) -> dh.SchemaMetadataClass:
    return dh.SchemaMetadataClass(
        schemaName=name,
        platform="urn:li:dataPlatform:postgres",
        version=0,
        hash="",
        platformSchema=dh.OtherSchemaClass(rawSchema=""),
        fields=[
            dh.SchemaFieldClass(fieldPath=c, type=dh.SchemaFieldDataTypeClass(dh.NumberTypeClass()), nativeDataType="numeric")
            for c in columns
        ],
    )


def _level(k: int, depth: int) -> str:
    return "raw" if k == 0 else "marts" if k == depth - 1 else f"layer{k}"


def _people() -> Iterator[MetadataChangeProposalWrapper]:
    for person in _PEOPLE:
        yield _mcp(person, dh.CorpUserInfoClass(active=person != _GONE, displayName=person.rsplit(":", 1)[1]))


# The SDK decodes a timeseries event's default partition afresh for every event it constructs (a sixth of a build):
# its own default, decoded once and shared.
_WHOLE_TABLE = dh.OperationClass(timestampMillis=0, operationType="INSERT", lastUpdatedTimestamp=0).partitionSpec


def _dataset(urn: str, name: str, index: int, upstreams: list[str], owner: str, shape: Shape) -> Iterator[MetadataChangeProposalWrapper]:
    """A dataset's aspects, its operations newest last, and its assertion with its run history."""
    yield _mcp(urn, _schema(name, ["id", "amount", "category", "updated_at", f"c{index % 13}"]))
    yield _mcp(urn, dh.DatasetPropertiesClass(name=name, description=f"{name} table"))
    yield _mcp(urn, dh.OwnershipClass([dh.OwnerClass(owner, "TECHNICAL_OWNER")]))
    if upstreams:
        yield _mcp(urn, dh.UpstreamLineageClass([dh.UpstreamClass(u, "TRANSFORMED") for u in upstreams]))
    latest = NOW - (10 * DAY if index % _STALE_EVERY == 0 else HOUR)
    for e in reversed(range(shape.operations)):
        at = latest - e * DAY
        yield _mcp(urn, dh.OperationClass(timestampMillis=at, operationType="INSERT", lastUpdatedTimestamp=at,
                                              partitionSpec=_WHOLE_TABLE))
    assertion = f"urn:li:assertion:not_null_{index}"
    column = f"urn:li:schemaField:({urn},id)"
    yield _mcp(assertion, dh.AssertionInfoClass(
        type="DATASET",
        datasetAssertion=dh.DatasetAssertionInfoClass(dataset=urn, scope="DATASET_COLUMN", operator="NOT_NULL", fields=[column]),
    ))
    for r in reversed(range(shape.assertion_runs)):
        failed = r == 0 and index % _FAILING_EVERY == 0
        yield _mcp(assertion, dh.AssertionRunEventClass(
            timestampMillis=NOW - HOUR - r * DAY, runId=f"run{r}", asserteeUrn=urn, assertionUrn=assertion,
            status="COMPLETE", result=dh.AssertionResultClass(type="FAILURE" if failed else "SUCCESS"), partitionSpec=_WHOLE_TABLE,
        ))


def _family(f: int, shape: Shape) -> Iterator[MetadataChangeProposalWrapper]:
    tables = range(shape.tables_per_family)
    chains = [[dataset_urn(f"{_level(k, shape.depth)}.f{f}_t{t}") for k in range(shape.depth)] for t in tables]
    for t in tables:
        for k, urn in enumerate(chains[t]):
            upstreams = [] if k == 0 else [chains[t][k - 1]]
            if k == shape.depth - 1 and len(chains) > 1:
                upstreams.append(chains[(t + 1) % len(chains)][k - 1])
            index = (f * shape.tables_per_family + t) * shape.depth + k
            name = f"{_level(k, shape.depth)}.f{f}_t{t}"
            yield from _dataset(urn, name, index, upstreams, _PEOPLE[index % len(_PEOPLE)], shape)
    features = [
        f"urn:li:mlFeature:(f{f}_t{t},feature{i})" for t in tables for i in range(shape.features_per_table)
    ]
    for n, feature in enumerate(features):
        yield _mcp(feature, dh.MLFeaturePropertiesClass(sources=[chains[n // shape.features_per_table][-1]]))
    for t in tables:
        table = f"urn:li:mlFeatureTable:(urn:li:dataPlatform:feast,f{f}_t{t})"
        per = shape.features_per_table
        yield _mcp(table, dh.MLFeatureTablePropertiesClass(mlFeatures=features[t * per : (t + 1) * per]))
    first = f * shape.models_per_family
    for j, m in enumerate(range(first, min(first + shape.models_per_family, shape.models))):
        start = j * len(features) // shape.models_per_family
        picked = [(start + i) % len(features) for i in range(shape.features_per_model)]
        used = [features[p] for p in picked]
        marts = sorted({chains[p // shape.features_per_table][-1] for p in picked})
        model = f"urn:li:mlModel:(urn:li:dataPlatform:mlflow,model{m},PROD)"
        run = f"urn:li:dataProcessInstance:train{m}"
        deployment = f"urn:li:mlModelDeployment:(urn:li:dataPlatform:sagemaker,endpoint{m},PROD)"
        yield _mcp(run, dh.DataProcessInstancePropertiesClass(
            name=f"train{m}", created=dh.AuditStampClass(time=NOW - 3 * DAY, actor=_PEOPLE[m % len(_PEOPLE)]),
        ))
        yield _mcp(run, dh.DataProcessInstanceInputClass(inputs=[], inputEdges=[dh.EdgeClass(u) for u in marts]))
        yield _mcp(deployment, dh.MLModelDeploymentPropertiesClass(status="IN_SERVICE"))
        yield _mcp(model, dh.MLModelPropertiesClass(
            name=f"model{m}", mlFeatures=used, trainingJobs=[run], deployments=[deployment],
        ))
        yield _mcp(model, dh.OwnershipClass([dh.OwnerClass(_PEOPLE[m % len(_PEOPLE)], "DATAOWNER")]))


def estate(shape: Shape) -> Iterator[MetadataChangeProposalWrapper]:
    """The proposals of the whole estate, family by family, drawn lazily: ten thousand models do not fit in a list."""
    yield from _people()
    for f in range(shape.families):
        yield from _family(f, shape)


ENTITY_TYPES = (
    "corpuser", "dataset", "assertion", "mlFeature", "mlFeatureTable", "mlModel", "mlModelDeployment",
    "dataProcessInstance",
)


def entities(graph: MetadataGraph) -> list[str]:
    """Every URN the estate holds, in the order :func:`read_everything` reads them."""
    return [urn for entity_type in ENTITY_TYPES for urn in graph.list_urns(entity_type)]


def read_everything(graph: MetadataGraph, urns: list[str], history_limit: int) -> None:
    """The floor any scan pays: every aspect of every entity read once through the port, with as much of
    each history as a scan reads, as a scan reads it (operations whole, of assertion runs the values the scan
    uses); the estate has no other timeseries."""
    graph.get_aspects(urns)
    graph.timeseries([u for u in urns if u.startswith("urn:li:dataset:")], OperationClass, limit=history_limit)
    assertions = [u for u in urns if u.startswith("urn:li:assertion:")]
    graph.timeseries_values(assertions, AssertionRunEventClass, RUN_FIELDS, limit=history_limit)
