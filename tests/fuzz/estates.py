"""Malformed estates for fuzzing the whole read path: hypothesis draws them, a real Lite file holds them.

An estate is drawn from small pools of URNs per entity type, so links meet,
loop and dangle: lineage with cycles and self-loops, models pointing at runs,
features and deployments nobody wrote, aspects missing or written twice,
times in seconds, negative or centuries ahead, profiles and metrics that make
no sense, odd and non-ASCII names, a fan-in of thousands. Every aspect is a
valid DataHub aspect (the Lite writer and GMS refuse others); what is wrong is
what real sources get wrong.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import datahub.metadata.schema_classes as dh
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from hypothesis import strategies as st

NOW_MS = int(time.time() * 1000)
NAMES = ["raw.orders", "marts.fct", "Ünïcødé.tåble", "with space.t", "UPPER.Case", "x", "a.b.c.d.e.f"]
DATASETS = [f"urn:li:dataset:(urn:li:dataPlatform:{p},{n},PROD)" for p, n in zip(["postgres", "dbt"] * 4, NAMES)]
GROUPS = [f"urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,{n},PROD)" for n in ("fraud", "churn")]
MODELS = [f"urn:li:mlModel:(urn:li:dataPlatform:mlflow,{g}_{v},PROD)" for g in ("fraud", "churn") for v in (1, 2)]
FEATURES = [f"urn:li:mlFeature:(t{t},{n})" for t in (0, 1) for n in ("amount", "qty", "ünï")]
TABLES = [f"urn:li:mlFeatureTable:(urn:li:dataPlatform:feast,t{t})" for t in (0, 1)]
RUNS = [f"urn:li:dataProcessInstance:run-{i}" for i in range(3)]
DEPLOYMENTS = [f"urn:li:mlModelDeployment:(urn:li:dataPlatform:sagemaker,ep{i},PROD)" for i in range(2)]
ASSERTIONS = [f"urn:li:assertion:a{i}" for i in range(3)]
PEOPLE = ["urn:li:corpuser:ana", "urn:li:corpuser:left", "urn:li:corpuser:ghost"]
COLUMNS = ["amount", "qty", "ünï", "occurred_at", "id"]
DANGLING = "urn:li:dataset:(urn:li:dataPlatform:postgres,never.written,PROD)"

# Times as sources write them: milliseconds, seconds by mistake, zero, negative, centuries ahead.
times = st.one_of(
    st.integers(NOW_MS - 400 * 86_400_000, NOW_MS),
    st.integers(NOW_MS // 1000 - 10**7, NOW_MS // 1000),
    st.sampled_from([0, -1, -86_400_000, 32_503_680_000_000, NOW_MS]),
)
maybe_time = st.none() | times
text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=12)
odd_values = st.one_of(text, st.sampled_from(["", "NaN", "inf", "-1", "1e400", "yesterday", "1700000000"]),
                       times.map(str))
datasets = st.sampled_from(DATASETS + [DANGLING])


def _field(column: str) -> dh.SchemaFieldClass:
    return dh.SchemaFieldClass(fieldPath=column, type=dh.SchemaFieldDataTypeClass(dh.NumberTypeClass()),
                               nativeDataType="numeric")


@st.composite
def _dataset_aspects(draw: Callable[..., Any], urn: str) -> list[Any]:
    out: list[Any] = []
    columns = draw(st.lists(st.sampled_from(COLUMNS), unique=True, max_size=5))
    if draw(st.booleans()):
        out.append(dh.SchemaMetadataClass(schemaName=urn, platform="urn:li:dataPlatform:postgres", version=0, hash="",
                                          platformSchema=dh.OtherSchemaClass(rawSchema=""),
                                          fields=[_field(c) for c in columns]))
    if draw(st.booleans()):
        ups = draw(st.lists(datasets, max_size=4))  # may hold urn itself: a self-loop
        fine = [dh.FineGrainedLineageClass(
            upstreamType="FIELD_SET", downstreamType="FIELD",
            upstreams=[f"urn:li:schemaField:({u},{draw(st.sampled_from(COLUMNS))})"],
            downstreams=[f"urn:li:schemaField:({urn},{draw(st.sampled_from(COLUMNS))})"],
        ) for u in ups if draw(st.booleans())]
        out.append(dh.UpstreamLineageClass(
            upstreams=[dh.UpstreamClass(dataset=u, type=draw(st.sampled_from(["TRANSFORMED", "COPY", "VIEW"])))
                       for u in ups], fineGrainedLineages=fine or None))
    for _ in range(draw(st.integers(0, 3))):
        at = draw(times)
        out.append(dh.OperationClass(timestampMillis=at, lastUpdatedTimestamp=draw(times),
                                     operationType=draw(st.sampled_from(["INSERT", "UPDATE", "CREATE", "DROP"]))))
    if draw(st.booleans()):
        last = draw(maybe_time)
        out.append(dh.DatasetPropertiesClass(
            name=draw(text), description=draw(st.none() | text),
            customProperties={"last_refreshed_at": draw(odd_values), draw(text): draw(odd_values)},
            lastModified=dh.TimeStampClass(time=last) if last is not None else None))
    if draw(st.booleans()):
        out.append(dh.OwnershipClass(owners=[dh.OwnerClass(owner=p, type="DATAOWNER")
                                             for p in draw(st.lists(st.sampled_from(PEOPLE), max_size=3))]))
    if draw(st.booleans()):
        out.append(dh.DeprecationClass(deprecated=draw(st.booleans()), note=draw(text), actor=PEOPLE[0],
                                       decommissionTime=draw(maybe_time)))
    if draw(st.booleans()):
        out.append(dh.StatusClass(removed=draw(st.booleans())))
    if draw(st.booleans()):
        out.append(dh.GlobalTagsClass(tags=[dh.TagAssociationClass(tag=f"urn:li:tag:{t}")
                                            for t in draw(st.lists(st.sampled_from(["pii", "PII", "ünï"]), max_size=2))]))
    for _ in range(draw(st.integers(0, 2))):
        out.append(dh.DatasetProfileClass(
            timestampMillis=draw(times), rowCount=draw(st.none() | st.integers(-5, 10**7)),
            fieldProfiles=[dh.DatasetFieldProfileClass(
                fieldPath=c, nullProportion=draw(st.none() | st.floats(-1, 2, allow_nan=False)),
                uniqueCount=draw(st.none() | st.integers(-1, 100)), mean=draw(st.none() | odd_values),
                stdev=draw(st.none() | odd_values), min=draw(st.none() | odd_values), max=draw(st.none() | odd_values),
            ) for c in draw(st.lists(st.sampled_from(COLUMNS), unique=True, max_size=3))]))
    return out


@st.composite
def _model_aspects(draw: Callable[..., Any], urn: str) -> list[Any]:
    if not draw(st.booleans()):
        return []
    return [dh.MLModelPropertiesClass(
        name=draw(st.none() | text),
        trainingJobs=draw(st.lists(st.sampled_from(RUNS + ["urn:li:dataProcessInstance:ghost"]), max_size=3)),
        mlFeatures=draw(st.lists(st.sampled_from(FEATURES + ["urn:li:mlFeature:(t9,gone)"]), max_size=4)),
        deployments=draw(st.lists(st.sampled_from(DEPLOYMENTS), max_size=2)),
        groups=draw(st.lists(st.sampled_from(GROUPS + [urn]), max_size=2)),
        version=dh.VersionTagClass(versionTag=draw(st.none() | st.sampled_from(["1", "2", "x", ""]))),
        customProperties={"status": draw(odd_values)},
    ), *([dh.VersionPropertiesClass(
        versionSet="urn:li:versionSet:(mlflow_x,mlModel)", version=dh.VersionTagClass(versionTag=draw(text)),
        sortId="1", aliases=[dh.VersionTagClass(versionTag=a) for a in draw(
            st.lists(st.sampled_from(["production", "champion", "ünï"]), max_size=2))])] if draw(st.booleans()) else [])]


@st.composite
def _other_aspects(draw: Callable[..., Any]) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for f in draw(st.lists(st.sampled_from(FEATURES), unique=True)):
        out.append((f, dh.MLFeaturePropertiesClass(sources=draw(st.lists(datasets, max_size=3)),
                                                   customProperties={"source_column": draw(odd_values)})))
    for t in draw(st.lists(st.sampled_from(TABLES), unique=True)):
        out.append((t, dh.MLFeatureTablePropertiesClass(mlFeatures=draw(st.lists(st.sampled_from(FEATURES), max_size=4)))))
    for r in draw(st.lists(st.sampled_from(RUNS), unique=True)):
        created = draw(times)
        out.append((r, dh.DataProcessInstancePropertiesClass(name=r, created=dh.AuditStampClass(created, PEOPLE[0]))))
        out.append((r, dh.DataProcessInstanceInputClass(inputs=draw(st.lists(datasets, max_size=3)))))
        for status in draw(st.lists(st.sampled_from(["STARTED", "COMPLETE"]), max_size=3)):
            out.append((r, dh.DataProcessInstanceRunEventClass(
                timestampMillis=draw(times), status=status, durationMillis=draw(st.none() | st.integers(-10, 10**9)))))
        if draw(st.booleans()):
            out.append((r, dh.MLTrainingRunPropertiesClass(trainingMetrics=[
                dh.MLMetricClass(name=draw(st.sampled_from(["table_rows.raw.orders", "roc_auc", "ünï"])),
                                 value=draw(odd_values)) for _ in range(draw(st.integers(0, 3)))])))
    for d in draw(st.lists(st.sampled_from(DEPLOYMENTS), unique=True)):
        out.append((d, dh.MLModelDeploymentPropertiesClass(
            status=draw(st.sampled_from(["IN_SERVICE", "OUT_OF_SERVICE", "UNKNOWN", "CREATING"])),
            version=dh.VersionTagClass(versionTag=draw(st.none() | st.sampled_from(["1", "2", "x"]))))))
    for a in draw(st.lists(st.sampled_from(ASSERTIONS), unique=True)):
        on = draw(datasets)
        out.append((a, dh.AssertionInfoClass(type="DATASET", datasetAssertion=dh.DatasetAssertionInfoClass(
            dataset=on, scope="DATASET_COLUMN", operator="NOT_NULL",
            fields=[f"urn:li:schemaField:({on},{draw(st.sampled_from(COLUMNS))})"]))))
        for _ in range(draw(st.integers(0, 4))):
            out.append((a, dh.AssertionRunEventClass(
                timestampMillis=draw(times), runId=draw(text), asserteeUrn=draw(datasets), assertionUrn=a,
                status="COMPLETE", result=dh.AssertionResultClass(
                    type=draw(st.sampled_from(["SUCCESS", "FAILURE", "ERROR", "INIT"])),
                    nativeResults={"failures": draw(odd_values)}))))
    for p in draw(st.lists(st.sampled_from(PEOPLE), unique=True)):
        out.append((p, dh.CorpUserInfoClass(active=draw(st.booleans()), displayName=draw(text))))
        if draw(st.booleans()):
            out.append((p, dh.CorpUserStatusClass(status=draw(st.sampled_from(["ACTIVE", "SUSPENDED"])),
                                                  lastModified=dh.AuditStampClass(0, p))))
    return out


def _fan_in(size: int) -> list[tuple[str, Any]]:
    """One table with ``size`` upstreams that exist nowhere else."""
    ups = [dh.UpstreamClass(dataset=f"urn:li:dataset:(urn:li:dataPlatform:s3,fan.{i},PROD)", type="TRANSFORMED")
           for i in range(size)]
    return [(DATASETS[1], dh.UpstreamLineageClass(upstreams=ups))]


@st.composite
def estates(draw: Callable[..., Any], fan_in: int = 0) -> list[MetadataChangeProposalWrapper]:
    """One malformed estate as MCPs in write order; an aspect may come twice (the second wins, as in DataHub)."""
    pairs: list[tuple[str, Any]] = []
    for urn in DATASETS:
        pairs += [(urn, a) for a in draw(_dataset_aspects(urn))]
    for urn in MODELS:
        pairs += [(urn, a) for a in draw(_model_aspects(urn))]
    pairs += draw(_other_aspects())
    if draw(st.booleans()) and pairs:
        pairs += draw(st.lists(st.sampled_from(pairs), max_size=3))  # written twice
    if fan_in and draw(st.integers(0, 9)) == 0:  # one estate in ten: a 10,000-wide table costs seconds per command
        pairs += _fan_in(fan_in)
    return [MetadataChangeProposalWrapper(entityUrn=urn, aspect=aspect) for urn, aspect in pairs]
