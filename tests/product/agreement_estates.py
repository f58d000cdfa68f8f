"""Small, well-formed estates in the shapes stock DataHub sources write, for the cross-command agreement test.

One MLflow registered model ``fraud`` with one to three versions (the mlflow source: ``mlModelProperties`` with
its group, version and training job, ``versionProperties`` with the registry's aliases, a stage tag, maybe an
endpoint), each fit by a training run (``dataProcessInstance``: created, inputs, STARTED/COMPLETE events) that
read the warehouse table ``shop.marts.fraud_features``, ``shop.labels.chargebacks`` or both. The warehouse
as DataHub's dbt source leaves it::

    postgres raw.payments  <-COPY-  dbt raw.payments (a dbt source)
    dbt staging.payments_clean (reads the dbt source)  -COPY->  postgres staging.payments_clean (+ siblings)
    dbt marts.fraud_features (reads postgres staging)    -COPY->  postgres marts.fraud_features (+ siblings)

with columns and column-level lineage on every edge (``note`` may be dropped by staging). Freshness, at various
ages, comes from operations, ``datasetProperties.lastModified``, dbt source freshness (``schemaMetadata.lastModified``
by ``dbt_executor``) and dbt builds (``run_results.json`` as process instances producing the dbt node). dbt tests
are custom assertions on dbt nodes' columns with SUCCESS/FAILURE runs, some after "now".

Times are drawn as ages in hours and turned into instants when the estate is written, so a drawn estate means the
same whenever it runs; ages stay far from every window's edge.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

import datahub.metadata.schema_classes as dh
from datahub.api.entities.dataprocess.dataprocess_instance import DataProcessInstance, InstanceRunResult
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.utilities.urns.dataset_urn import DatasetUrn
from hypothesis import strategies as st

HOUR = 3_600_000
GROUP = "urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,fraud,PROD)"
VERSION_SET = "urn:li:versionSet:(mlflow_fraud_PROD,mlModel)"
ENDPOINT = "urn:li:mlModelDeployment:(urn:li:dataPlatform:sagemaker,fraud-endpoint,PROD)"


def dataset(platform: str, name: str) -> str:
    return f"urn:li:dataset:(urn:li:dataPlatform:{platform},shop.{name},PROD)"


def field(urn: str, column: str) -> str:
    return f"urn:li:schemaField:({urn},{column})"


def version_urn(version: int) -> str:
    return f"urn:li:mlModel:(urn:li:dataPlatform:mlflow,fraud_{version},PROD)"


def run_urn(version: int) -> str:
    return f"urn:li:dataProcessInstance:fraud-train-{version}"


def version_names(version: int) -> tuple[str, ...]:
    """Every name of one version: ``NAME/VERSION`` and its URN."""
    return (f"fraud/{version}", version_urn(version))


REGISTERED_NAMES = ("fraud", GROUP)  # the registered model: its name and its group's URN


RAW_PG, RAW_DBT = dataset("postgres", "raw.payments"), dataset("dbt", "raw.payments")
STG_DBT, STG_PG = dataset("dbt", "staging.payments_clean"), dataset("postgres", "staging.payments_clean")
FEAT_DBT, FEAT_PG = dataset("dbt", "marts.fraud_features"), dataset("postgres", "marts.fraud_features")
LABELS = dataset("postgres", "labels.chargebacks")

# One physical table -> every description of it (the canonical first: where the COPY chain ends).
TABLES: Mapping[str, tuple[str, ...]] = {
    "raw.payments": (RAW_PG, RAW_DBT),
    "staging.payments_clean": (STG_DBT, STG_PG),
    "marts.fraud_features": (FEAT_DBT, FEAT_PG),
    "labels.chargebacks": (LABELS,),
}
# A table whose short name is raw.payments' too, written only into estates that ask for it (``Estate.namesake``).
NAMESAKE = dataset("postgres", "archive.payments")
TABLE_OF = {**{urn: table for table, urns in TABLES.items() for urn in urns}, NAMESAKE: "archive.payments"}
DBT_IDS = {RAW_DBT: "source.shop.raw.payments", STG_DBT: "model.shop.payments_clean",
           FEAT_DBT: "model.shop.fraud_features"}
RAW_COLUMNS = ("payment_id", "amount", "currency", "note")
LABEL_COLUMNS = ("payment_id", "is_fraud")
# Which freshness records each description can carry, as the source that writes it would.
RECORDS = {
    RAW_PG: ("operation", "lastModified"),
    RAW_DBT: ("source_freshness",),
    STG_DBT: ("build",),
    STG_PG: ("operation", "lastModified"),
    FEAT_DBT: ("build",),
    FEAT_PG: ("operation", "lastModified"),
    LABELS: ("operation", "lastModified"),
}


def table_names(table: str) -> tuple[str, ...]:
    """Every name a team may call one physical table by (a key of :data:`TABLES`): each description's URN and
    ``platform:name``, a dbt node's ``unique_id``, the full name, every unique trailing part, the short name in
    capitals. No two tables of these estates share a trailing part."""
    parts = f"shop.{table}".split(".")
    forms: list[str] = []
    for urn in TABLES[table]:
        forms += [urn, f"{urn.split(',')[0].rsplit(':', 1)[1]}:shop.{table}", *([DBT_IDS[urn]] if urn in DBT_IDS else [])]
    return (*forms, *(".".join(parts[i:]) for i in range(len(parts))), parts[-1].upper())


# Where dbt tests sit: a dbt node's column (DataHub's dbt source asserts on the dbt twin).
TESTABLE = ((RAW_DBT, "amount"), (RAW_DBT, "note"), (STG_DBT, "amount"), (STG_DBT, "currency"),
            (FEAT_DBT, "amount_usd"))

# Ages in hours: never near a window (24, 48, 168 h) for the seconds the commands take; negative is after now.
AGES = (-3, 2, 30, 100, 300)
ALIASES = ("production", "Production", "champion", "challenger")
STAGES = (None, "mlflow_production", "mlflow_staging", "mlflow_archived", "mlflow_none")
WINDOWS: tuple[Mapping[str, float], ...] = (
    {}, {"*marts.fraud_features": 24}, {"dbt:*": 48}, {"postgres:shop.raw.*": 24}, {"*labels*": 48},
)


@dataclass(frozen=True)
class Version:
    number: int
    aliases: tuple[str, ...]
    stage: str | None
    trained_hours_ago: int
    reads: tuple[str, ...]  # the warehouse tables its training run read

    @property
    def urn(self) -> str:
        return version_urn(self.number)


@dataclass(frozen=True)
class Endpoint:
    status: str  # IN_SERVICE or OUT_OF_SERVICE
    serves: int  # the version it records serving
    listed_on_every_version: bool  # the mlflow source lists an endpoint under every version of the model


@dataclass(frozen=True)
class DbtTest:
    on: str  # the dbt node
    column: str
    runs: tuple[tuple[int, str], ...]  # (age in hours, SUCCESS/FAILURE), distinct ages

    @property
    def urn(self) -> str:
        return f"urn:li:assertion:not_null_{self.on.split(',')[1].replace('.', '_')}_{self.column}"

    @property
    def name(self) -> str:
        return f"not_null_{self.on.split(',')[1].split('.')[-1]}_{self.column}"

    @property
    def unique_id(self) -> str:
        """dbt's ``unique_id`` for the test, as DataHub's dbt source keeps it."""
        return f"test.shop.{self.name}.0a1b2c"

    @property
    def names(self) -> tuple[str, ...]:
        """Every name a team may call the test by: its URN, its dbt name (in any case) and ``unique_id``."""
        return (self.urn, self.name, self.name.upper(), self.unique_id)


@dataclass(frozen=True)
class Estate:
    versions: tuple[Version, ...]
    endpoint: Endpoint | None
    staging_keeps_note: bool
    freshness: tuple[tuple[str, str, int], ...]  # (dataset URN, record kind, age in hours)
    tests: tuple[DbtTest, ...]
    windows: Mapping[str, float]
    namesake: bool = False  # the warehouse also holds archive.payments: "payments" names two tables

    def overlay(self) -> dict[str, Any]:
        """The recall.yaml laid over the shipped one: no replay on MLflow models, the drawn windows."""
        return {"impact": {"measured": {"enabled": False}},
                **({"freshness": {"windows": dict(self.windows)}} if self.windows else {})}

    def describe(self) -> str:
        """The drawn estate in a few lines, for a failure message."""
        lines = []
        for v in self.versions:
            lines.append(f"fraud_{v.number}: aliases={list(v.aliases)} stage={v.stage} trained {v.trained_hours_ago} h "
                         f"ago on {' + '.join(TABLE_OF[r] for r in v.reads)}")
        if self.endpoint:
            e = self.endpoint
            lines.append(f"endpoint {e.status} recording version {e.serves}, listed on "
                         f"{'every version' if e.listed_on_every_version else 'its own'}")
        lines.append(f"staging keeps note: {self.staging_keeps_note}; windows: {dict(self.windows)}")
        for urn, kind, age in self.freshness:
            lines.append(f"freshness: {kind} on {urn.split(',')[0].split(':')[-1]}:{urn.split(',')[1]} {age} h ago")
        for t in self.tests:
            lines.append(f"test {t.name} on {t.on.split(',')[1]}.{t.column}: "
                         + ", ".join(f"{r} {a} h ago" for a, r in t.runs))
        return "\n".join(lines)

    def mcps(self, now_ms: int) -> list[MetadataChangeProposalWrapper]:
        return _write(self, lambda hours: now_ms - hours * HOUR)


@st.composite
def _version(draw: Callable[..., Any], number: int, holders: Mapping[str, int]) -> Version:
    return Version(
        number=number,
        aliases=tuple(a for a in ALIASES if holders.get(a) == number),
        stage=draw(st.sampled_from(STAGES)),
        trained_hours_ago=draw(st.sampled_from((24 * 40, 24 * 20, 24 * 5, 20)[number - 1:number + 1])),
        reads=draw(st.sampled_from(((FEAT_PG,), (FEAT_PG, LABELS), (FEAT_PG, LABELS), (LABELS,)))),
    )


@st.composite
def _test(draw: Callable[..., Any], where: tuple[str, str]) -> DbtTest:
    ages = draw(st.lists(st.sampled_from(AGES), min_size=1, max_size=4, unique=True))
    return DbtTest(where[0], where[1], tuple((a, draw(st.sampled_from(("SUCCESS", "FAILURE")))) for a in sorted(ages)))


@st.composite
def estates(draw: Callable[..., Any]) -> Estate:
    count = draw(st.integers(1, 3))
    # an alias names one version at a time (MLflow moves it); each may be on none
    holders = {a: h for a in ALIASES if (h := draw(st.none() | st.integers(1, count)))}
    versions = tuple(draw(_version(n, holders)) for n in range(1, count + 1))
    endpoint = None
    if draw(st.booleans()):
        endpoint = Endpoint(draw(st.sampled_from(("IN_SERVICE", "OUT_OF_SERVICE"))), draw(st.integers(1, count)),
                            draw(st.booleans()))
    freshness = []
    for urn, kinds in RECORDS.items():
        for kind in draw(st.lists(st.sampled_from(kinds), unique=True, max_size=len(kinds))):
            freshness.append((urn, kind, draw(st.sampled_from(AGES))))
    places = draw(st.lists(st.sampled_from(TESTABLE), unique=True, max_size=2))
    return Estate(
        versions=versions,
        endpoint=endpoint,
        staging_keeps_note=draw(st.booleans()),
        freshness=tuple(freshness),
        tests=tuple(draw(_test(p)) for p in places),
        windows=draw(st.sampled_from(WINDOWS)),
    )


# -- writing an estate as the stock sources would -------------------------------------------------------------


def _mcp(urn: str, aspect: Any) -> MetadataChangeProposalWrapper:
    return MetadataChangeProposalWrapper(entityUrn=urn, aspect=aspect)


def _schema(urn: str, columns: tuple[str, ...], platform: str, loaded_ms: int | None = None) -> dh.SchemaMetadataClass:
    return dh.SchemaMetadataClass(
        schemaName=urn.split(",")[1], platform=f"urn:li:dataPlatform:{platform}", version=0, hash="",
        platformSchema=dh.OtherSchemaClass(rawSchema=""),
        fields=[dh.SchemaFieldClass(fieldPath=c, type=dh.SchemaFieldDataTypeClass(dh.NumberTypeClass()),
                                    nativeDataType="numeric") for c in columns],
        lastModified=dh.AuditStampClass(loaded_ms, "urn:li:corpuser:dbt_executor") if loaded_ms else None,
    )


def _lineage(urn: str, upstream: str, kind: str, columns: Mapping[str, tuple[str, ...]]) -> dh.UpstreamLineageClass:
    """``columns``: each of our columns -> the upstream columns it is computed from."""
    return dh.UpstreamLineageClass(
        upstreams=[dh.UpstreamClass(dataset=upstream, type=kind)],
        fineGrainedLineages=[dh.FineGrainedLineageClass(
            upstreamType="FIELD_SET", downstreamType="FIELD", upstreams=[field(upstream, u) for u in ups],
            downstreams=[field(urn, ours)]) for ours, ups in columns.items()],
    )


def _same(columns: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    return {c: (c,) for c in columns}


def _build(node: str, upstream: str, start_ms: int) -> list[MetadataChangeProposalWrapper]:
    """A successful dbt run of ``node``, as DataHub's dbt source records ``run_results.json``."""
    instance = DataProcessInstance(
        id=f"inv-{start_ms}_{node}", orchestrator="dbt", cluster=None, template_urn=DatasetUrn.from_string(node),
        inlets=[DatasetUrn.from_string(upstream)], outlets=[DatasetUrn.from_string(node)],
        properties={"dbt_urn": node},
    )
    return [
        *instance.generate_mcp(materialize_iolets=False, created_ts_millis=start_ms),
        *instance.start_event_mcp(start_timestamp_millis=start_ms),
        *instance.end_event_mcp(end_timestamp_millis=start_ms + 60_000, start_timestamp_millis=start_ms,
                                result=InstanceRunResult.SUCCESS, result_type="success"),
    ]


def _write(estate: Estate, at: Callable[[int], int]) -> list[MetadataChangeProposalWrapper]:
    out: list[MetadataChangeProposalWrapper] = []
    records = {(urn, kind): at(age) for urn, kind, age in estate.freshness}
    stg_columns = RAW_COLUMNS if estate.staging_keeps_note else RAW_COLUMNS[:3]
    feat_columns = ("payment_id", "amount_usd", "currency", *(("note",) if estate.staging_keeps_note else ()))
    feat_from = {"payment_id": ("payment_id",), "amount_usd": ("amount", "currency"), "currency": ("currency",),
                 **({"note": ("note",)} if estate.staging_keeps_note else {})}
    columns = {RAW_PG: RAW_COLUMNS, RAW_DBT: RAW_COLUMNS, STG_DBT: stg_columns, STG_PG: stg_columns,
               FEAT_DBT: feat_columns, FEAT_PG: feat_columns, LABELS: LABEL_COLUMNS}

    if estate.namesake:
        columns[NAMESAKE] = RAW_COLUMNS
    for urn in (RAW_PG, STG_PG, FEAT_PG, LABELS, *((NAMESAKE,) if estate.namesake else ())):  # the postgres source
        modified = records.get((urn, "lastModified"))
        out.append(_mcp(urn, dh.DatasetPropertiesClass(
            name=urn.split(",")[1].split(".")[-1], customProperties={},
            lastModified=dh.TimeStampClass(modified) if modified is not None else None)))
        out.append(_mcp(urn, _schema(urn, columns[urn], "postgres")))
    for urn, unique_id in DBT_IDS.items():  # the dbt source
        out.append(_mcp(urn, dh.DatasetPropertiesClass(
            name=urn.split(",")[1].split(".")[-1],
            customProperties={"dbt_unique_id": unique_id, "node_type": unique_id.split(".")[0]})))
        out.append(_mcp(urn, _schema(urn, columns[urn], "dbt", records.get((urn, "source_freshness")))))
    out.append(_mcp(RAW_DBT, _lineage(RAW_DBT, RAW_PG, "COPY", _same(RAW_COLUMNS))))  # a source copies its table
    out.append(_mcp(STG_DBT, _lineage(STG_DBT, RAW_DBT, "TRANSFORMED", _same(stg_columns))))
    out.append(_mcp(FEAT_DBT, _lineage(FEAT_DBT, STG_PG, "TRANSFORMED", feat_from)))
    for node, table in ((STG_DBT, STG_PG), (FEAT_DBT, FEAT_PG)):  # a model's warehouse table copies its node
        out.append(_mcp(table, _lineage(table, node, "COPY", _same(columns[node]))))
        out.append(_mcp(table, dh.SiblingsClass(siblings=[node], primary=False)))
        out.append(_mcp(node, dh.SiblingsClass(siblings=[table], primary=True)))
    for urn in (RAW_PG, STG_PG, FEAT_PG, LABELS):
        if (urn, "operation") in records:
            ms = records[(urn, "operation")]
            out.append(_mcp(urn, dh.OperationClass(timestampMillis=ms, lastUpdatedTimestamp=ms,
                                                   operationType="INSERT", actor="urn:li:corpuser:loader")))
    for node, upstream in ((STG_DBT, RAW_DBT), (FEAT_DBT, STG_PG)):
        if (node, "build") in records:
            out += _build(node, upstream, records[(node, "build")])

    for test in estate.tests:
        out.append(_mcp(test.urn, dh.AssertionInfoClass(
            type="CUSTOM", source=dh.AssertionSourceClass(type="EXTERNAL"),
            customProperties={"dbt_unique_id": test.unique_id},
            customAssertion=dh.CustomAssertionInfoClass(
                type="dbt", entity=test.on, field=field(test.on, test.column), fields=[field(test.on, test.column)],
                scope="DATASET_COLUMN", operator="NOT_NULL", aggregation="_NATIVE_", nativeType=test.name),
        )))
        for age, result in test.runs:
            ms = at(age)
            out.append(_mcp(test.urn, dh.AssertionRunEventClass(
                timestampMillis=ms, runId=f"inv-{ms}", asserteeUrn=test.on, assertionUrn=test.urn, status="COMPLETE",
                result=dh.AssertionResultClass(
                    type=result, nativeResults={"failures": "12"} if result == "FAILURE" else {}))))

    out.append(_mcp(GROUP, dh.MLModelGroupPropertiesClass(name="fraud", customProperties={})))
    if estate.endpoint:
        e = estate.endpoint
        out.append(_mcp(ENDPOINT, dh.MLModelDeploymentPropertiesClass(
            status=e.status, version=dh.VersionTagClass(versionTag=str(e.serves)), customProperties={})))
    for v in estate.versions:
        listed = estate.endpoint is not None and (estate.endpoint.listed_on_every_version
                                                   or estate.endpoint.serves == v.number)
        out.append(_mcp(version_urn(v.number), dh.MLModelPropertiesClass(
            name=f"fraud_{v.number}", customProperties={"status": "READY"},
            version=dh.VersionTagClass(versionTag=str(v.number)), trainingJobs=[run_urn(v.number)],
            groups=[GROUP], deployments=[ENDPOINT] if listed else None)))
        out.append(_mcp(version_urn(v.number), dh.VersionPropertiesClass(
            versionSet=VERSION_SET, version=dh.VersionTagClass(versionTag=str(v.number)),
            sortId=f"{v.number:010d}", aliases=[dh.VersionTagClass(versionTag=a) for a in v.aliases])))
        if v.stage:
            out.append(_mcp(version_urn(v.number), dh.GlobalTagsClass(
                tags=[dh.TagAssociationClass(tag=f"urn:li:tag:{v.stage}")])))
        run, start = run_urn(v.number), at(v.trained_hours_ago)
        out.append(_mcp(run, dh.DataProcessInstancePropertiesClass(
            name=f"fraud-train-{v.number}", type="BATCH_AD_HOC",
            created=dh.AuditStampClass(start, "urn:li:corpuser:ml"), customProperties={})))
        out.append(_mcp(run, dh.DataProcessInstanceInputClass(inputs=list(v.reads))))
        out.append(_mcp(run, dh.DataProcessInstanceRunEventClass(timestampMillis=start, status="STARTED")))
        out.append(_mcp(run, dh.DataProcessInstanceRunEventClass(
            timestampMillis=start + 600_000, status="COMPLETE", durationMillis=600_000,
            result=dh.DataProcessInstanceRunResultClass(type="SUCCESS", nativeResultType="mlflow"))))
    return out
