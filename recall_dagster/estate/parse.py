"""Aspects in, views out: every rule about where DataHub keeps a fact lives here.

These functions are pure.  The resolver reads aspects through the graph port
and hands them over; nothing here knows which store they came from.  Estates
written by other tools are the norm, so every field is optional and legacy
shapes (``dataProcessInstanceInput.inputs``, v2 field paths, dataJob inputs)
are read alongside the current ones.
"""

from __future__ import annotations

import math
import sys
from datetime import datetime, timezone
from functools import lru_cache
from itertools import takewhile
from typing import Iterable, Mapping, NamedTuple, TypeVar, cast

from datahub.metadata.schema_classes import (
    AssertionInfoClass,
    CorpUserInfoClass,
    CorpUserStatusClass,
    DataFlowInfoClass,
    DataJobInfoClass,
    DataJobInputOutputClass,
    DataProcessInstanceInputClass,
    DataProcessInstancePropertiesClass,
    DatasetFieldProfileClass,
    DatasetProfileClass,
    DatasetPropertiesClass,
    DeprecationClass,
    EditableDatasetPropertiesClass,
    EditableSchemaMetadataClass,
    GlobalTagsClass,
    GlossaryTermInfoClass,
    GlossaryTermsClass,
    MLFeaturePropertiesClass,
    MLFeatureTablePropertiesClass,
    MLModelDeploymentPropertiesClass,
    MLModelGroupPropertiesClass,
    MLModelPropertiesClass,
    OwnershipClass,
    SchemaMetadataClass,
    SiblingsClass,
    StatusClass,
    UpstreamLineageClass,
    VersionPropertiesClass,
    _Aspect,
)
from datahub.metadata.urns import DataJobUrn
from datahub.utilities.urns.field_paths import get_simple_field_path_from_v2_field_path
from datahub.utilities.urns.urn import Urn

from recall_dagster.estate.measures import held_to, measurement, metric_name
from recall_dagster.estate.names import display_name
from recall_dagster.estate.production import registry_marks_production
from recall_dagster.estate.twins import twin_of
from recall_dagster.estate.views import (
    AssertionResult,
    Assertion,
    ColumnEdge,
    ColumnProfile,
    Dataset,
    Deployment,
    Feature,
    FeatureTable,
    FieldRef,
    Model,
    Owner,
    Profile,
    SchemaField,
    Term,
    TrainingRun,
)
from recall_dagster.graph.relationships import entity_type
from recall_dagster.instants import datetime_ms

Aspects = Mapping[str, _Aspect]

# Aspects read for owners and glossary terms; entities themselves are read whole
# so that "has no aspects at all" reliably means dangling.
PERSON_ASPECTS: list[type[_Aspect]] = [CorpUserInfoClass, CorpUserStatusClass, StatusClass]
TERM_ASPECTS: list[type[_Aspect]] = [GlossaryTermInfoClass]


_A = TypeVar("_A", bound=_Aspect)


def _get(aspects: Aspects, cls: type[_A]) -> _A | None:
    # the graph decodes each aspect name into its own class (graph.decode), so the aspect is a cls
    return cast("_A | None", aspects.get(cls.ASPECT_NAME))


def _unique(urns: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(u for u in urns if u))


def _text(value: str | None) -> str | None:
    return value.strip() if value and value.strip() else None


def is_removed(aspects: Aspects) -> bool:
    status = _get(aspects, StatusClass)
    return bool(status and status.removed)


def simple_path(field_path: str) -> str:
    """``[version=2.0].[type=struct].a.[type=int].b`` -> ``a.b``; simple paths pass through."""
    return get_simple_field_path_from_v2_field_path(field_path)


_SCHEMA_FIELD = "urn:li:schemaField:("


def field_ref(schema_field_urn: str) -> FieldRef | None:
    """(parent URN, simple field path) of a schemaField URN, None when it is not one.

    The SDK's parser rejects parents it cannot validate; other tools write
    those too, so such URNs are split at their last comma instead.
    """
    try:
        parsed = Urn.from_string(schema_field_urn)
    except Exception:  # fall back to reading the string
        if not (schema_field_urn.startswith(_SCHEMA_FIELD) and schema_field_urn.endswith(")")):
            return None
        parent, _, path = schema_field_urn[len(_SCHEMA_FIELD) : -1].rpartition(",")
        return (parent, simple_path(path)) if parent and path else None
    if parsed.entity_type != "schemaField" or len(parsed.entity_ids) != 2:
        return None
    return parsed.entity_ids[0], simple_path(parsed.entity_ids[1])


def tag_names(tags: GlobalTagsClass | None) -> tuple[str, ...]:
    return _unique(display_name(t.tag) for t in (tags.tags if tags else ()))


def _terms(terms: GlossaryTermsClass | None, glossary: Mapping[str, str]) -> tuple[Term, ...]:
    urns = _unique(t.urn for t in (terms.terms if terms else ()))
    return tuple(Term(u, glossary.get(u) or display_name(u)) for u in urns)


def _owners(ownership: OwnershipClass | None, people: Mapping[str, bool]) -> tuple[Owner, ...]:
    urns = _unique(o.owner for o in (ownership.owners if ownership else ()))
    return tuple(_owner(u, people.get(u, True)) for u in urns)


def referenced_people(aspects: Aspects) -> set[str]:
    ownership = _get(aspects, OwnershipClass)
    return {o.owner for o in ownership.owners} if ownership else set()


def referenced_terms(aspects: Aspects) -> set[str]:
    """Glossary terms attached to an entity or any of its fields."""
    found: set[str] = set()
    terms = _get(aspects, GlossaryTermsClass)
    found.update(t.urn for t in (terms.terms if terms else ()))
    schema = _get(aspects, SchemaMetadataClass)
    editable = _get(aspects, EditableSchemaMetadataClass)
    field_infos = [*(schema.fields if schema else ()), *(editable.editableSchemaFieldInfo if editable else ())]
    for info in field_infos:
        found.update(t.urn for t in (info.glossaryTerms.terms if info.glossaryTerms else ()))
    return found


def person_active(aspects: Aspects) -> bool:
    """False when a user or group was deleted, suspended or marked inactive.

    An owner URN with no entity behind it counts as present: many sources
    (dbt among them) name owners without ever creating the user.
    """
    if is_removed(aspects):
        return False
    status = _get(aspects, CorpUserStatusClass)
    if status and str(status.status).upper() == "SUSPENDED":
        return False
    info = _get(aspects, CorpUserInfoClass)
    return not (info is not None and info.active is False)


def term_name(aspects: Aspects) -> str | None:
    info = _get(aspects, GlossaryTermInfoClass)
    return _text(info.name) if info else None


def _epoch_ms(value: str) -> int | None:
    """Parse a custom property holding a time: epoch seconds, epoch millis or ISO-8601."""
    value = value.strip()
    if value.isdigit():
        number = int(value)
        return number * 1000 if number < 100_000_000_000 else number
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return datetime_ms(parsed)


@lru_cache(maxsize=1 << 16)
def _schema_field(path: str, type_: str, tags: tuple[str, ...], terms: tuple[Term, ...],
                  description: str | None) -> SchemaField:
    """One view per distinct column, however many tables have it (``id bigint``...): an estate's snapshot
    holds and loads each once instead of once per table, and equal views are interchangeable (frozen)."""
    return SchemaField(sys.intern(path), sys.intern(type_), tags, terms, description)


@lru_cache(maxsize=1 << 14)
def _owner(urn: str, active: bool) -> Owner:
    """One view per person and state, shared by every entity they own (see :func:`_schema_field`)."""
    return Owner(urn, active)


def _fields(aspects: Aspects, glossary: Mapping[str, str]) -> tuple[SchemaField, ...] | None:
    schema = _get(aspects, SchemaMetadataClass)
    if schema is None:
        return None
    editable = _get(aspects, EditableSchemaMetadataClass)
    edits = {simple_path(e.fieldPath): e for e in (editable.editableSchemaFieldInfo if editable else ())}
    result: list[SchemaField] = []
    for f in schema.fields:
        path = simple_path(f.fieldPath)
        edit = edits.get(path)
        result.append(
            _schema_field(
                path,
                f.nativeDataType or type(f.type.type).__name__.removesuffix("Class"),
                _unique([*tag_names(f.globalTags), *tag_names(edit.globalTags if edit else None)]),
                tuple(
                    dict.fromkeys(
                        [*_terms(f.glossaryTerms, glossary), *_terms(edit.glossaryTerms if edit else None, glossary)]
                    )
                ),
                _text(edit.description if edit else None) or _text(f.description),
            )
        )
    return tuple(result)


def _column_lineage(lineage: UpstreamLineageClass | None) -> tuple[ColumnEdge, ...]:
    edges: dict[ColumnEdge, None] = {}
    for fgl in (lineage.fineGrainedLineages or ()) if lineage else ():
        ups = [r for r in map(field_ref, fgl.upstreams or ()) if r]
        downs = [r for r in map(field_ref, fgl.downstreams or ()) if r]
        edges.update(dict.fromkeys(ColumnEdge(u, d) for u in ups for d in downs))
    return tuple(edges)


def parse_dataset(
    urn: str,
    aspects: Aspects,
    *,
    people: Mapping[str, bool],
    glossary: Mapping[str, str],
    freshness_property: str | None,
    operations_ms: tuple[tuple[int, int], ...] = (),
    builds_ms: tuple[int, ...] = (),
    written_by: tuple[str, ...] = (),
    writer_urns: tuple[str, ...] = (),
    assertions: tuple[Assertion, ...] = (),
    profiles: tuple[Profile, ...] = (),
) -> Dataset:
    if not aspects and not operations_ms and not builds_ms and not written_by and not assertions:
        # a table something writes or tests exists, described or not (dbt tests a source's warehouse table
        # it never describes; a job's operations name tables no source catalogued)
        return Dataset(urn=urn, name=display_name(urn), missing=True)
    props = _get(aspects, DatasetPropertiesClass)
    editable = _get(aspects, EditableDatasetPropertiesClass)
    deprecation: DeprecationClass | None = _get(aspects, DeprecationClass)
    lineage: UpstreamLineageClass | None = _get(aspects, UpstreamLineageClass)
    custom = dict(props.customProperties) if props else {}
    property_value = custom.get(freshness_property) if freshness_property else None
    return Dataset(
        urn=urn,
        name=display_name(urn),  # the qualified name; datasetProperties.name is often bare
        removed=is_removed(aspects),
        deprecated=bool(deprecation and deprecation.deprecated),
        deprecation_note=_text(deprecation.note) if deprecation and deprecation.deprecated else None,
        replacement=deprecation.replacement if deprecation and deprecation.deprecated else None,
        description=_text(editable.description if editable else None) or _text(props.description if props else None),
        fields=_fields(aspects, glossary),
        owners=_owners(_get(aspects, OwnershipClass), people),
        tags=tag_names(_get(aspects, GlobalTagsClass)),
        terms=_terms(_get(aspects, GlossaryTermsClass), glossary),
        upstreams=_unique(u.dataset for u in (lineage.upstreams if lineage else ())),
        copy_of=twin_of(lineage, _get(aspects, SiblingsClass)),
        column_lineage=_column_lineage(lineage),
        operations_ms=operations_ms,
        builds_ms=builds_ms,
        written_by=written_by,
        writer_urns=writer_urns,
        last_modified_ms=_last_modified(props, _get(aspects, SchemaMetadataClass)),
        property_updated_ms=_epoch_ms(property_value) if property_value else None,
        property_name=freshness_property if property_value else None,
        assertions=assertions,
        profiles=profiles,
        aliases=dataset_aliases(props),
    )


def dataset_aliases(props: DatasetPropertiesClass | None) -> tuple[str, ...]:
    """The names a team calls a dataset by besides its URN and name: a dbt node's ``unique_id``
    (``model.shop.fct_orders``), as DataHub's dbt source keeps it."""
    unique_id = (props.customProperties or {}).get("dbt_unique_id") if props else None
    return (unique_id,) if unique_id else ()


# Who DataHub's dbt source says stamped a source's ``schemaMetadata.lastModified``: it is the ``max_loaded_at`` that
# ``dbt source freshness`` found (sources.json), a data change. Other sources stamp a schema change there.
DBT_FRESHNESS_ACTOR = "urn:li:corpuser:dbt_executor"


def _last_modified(props: DatasetPropertiesClass | None, schema: SchemaMetadataClass | None) -> int | None:
    """When the platform, or dbt's source freshness, last saw the data change."""
    stamps = [props.lastModified.time if props and props.lastModified else None]
    if schema is not None and schema.lastModified is not None and schema.lastModified.actor == DBT_FRESHNESS_ACTOR:
        stamps.append(schema.lastModified.time or None)
    return max((s for s in stamps if s), default=None)


def _number(value: str | None) -> float | None:
    """A profiled statistic as a number; None for what is not one (a date's min, "NaN", an empty string)."""
    try:
        number = float(value) if value is not None else None
    except ValueError:
        return None
    return number if number is not None and math.isfinite(number) else None


def _column_profile(field: DatasetFieldProfileClass, rows: int | None) -> ColumnProfile:
    nulls = field.nullProportion
    if nulls is None and field.nullCount is not None and rows:
        nulls = field.nullCount / rows
    return ColumnProfile(
        null_fraction=nulls,
        distinct=field.uniqueCount,
        minimum=_number(field.min),
        maximum=_number(field.max),
        mean=_number(field.mean),
        stdev=_number(field.stdev),
    )


def parse_profiles(events: Iterable[DatasetProfileClass]) -> tuple[Profile, ...]:
    """Profiles newest first, one per instant, fields by their simple path (v2 paths reduced, as schemas are)."""
    by_time: dict[int, Profile] = {}
    for event in events:
        if event.timestampMillis is None or event.timestampMillis in by_time:
            continue
        by_time[event.timestampMillis] = Profile(
            at_ms=event.timestampMillis,
            row_count=event.rowCount,
            columns={simple_path(f.fieldPath): _column_profile(f, event.rowCount) for f in event.fieldProfiles or ()},
        )
    return tuple(by_time[t] for t in sorted(by_time, reverse=True))


def _datasets_only(urns: Iterable[str]) -> tuple[str, ...]:
    return _unique(u for u in urns if entity_type(u) == "dataset")


def _last_id(urn: str) -> str:
    """A feature's own name: the last part of its URN, without the namespace."""
    try:
        return Urn.from_string(urn).entity_ids[-1]
    except Exception:
        return urn


def parse_feature(
    urn: str, aspects: Aspects, tables: Iterable[str] = (), column_properties: Iterable[str] = ()
) -> Feature:
    """A feature; DataHub has no field for its source column, so a custom property may name it."""
    props = _get(aspects, MLFeaturePropertiesClass)
    custom = (props.customProperties or {}) if props else {}
    column = next((_text(custom.get(p)) for p in column_properties if _text(custom.get(p))), None)
    return Feature(
        urn=urn,
        name=_last_id(urn),
        missing=not aspects,
        removed=is_removed(aspects),
        sources=_datasets_only(props.sources or ()) if props else (),
        tables=_unique(sorted(tables)),
        column=simple_path(column) if column else None,
    )


def parse_feature_table(urn: str, aspects: Aspects) -> FeatureTable:
    props = _get(aspects, MLFeatureTablePropertiesClass)
    return FeatureTable(
        urn=urn,
        name=display_name(urn),
        missing=not aspects,
        features=_unique(props.mlFeatures or ()) if props else (),
    )


def parse_training_run(urn: str, aspects: Aspects) -> TrainingRun:
    """Inputs from ``inputEdges`` and the legacy ``inputs`` of a run, or a dataJob's inputs."""
    dpi_in = _get(aspects, DataProcessInstanceInputClass)
    job_io = _get(aspects, DataJobInputOutputClass)
    inputs: list[str] = []
    if dpi_in:
        inputs += [e.destinationUrn for e in dpi_in.inputEdges or ()]
        inputs += list(dpi_in.inputs or ())
    if job_io:
        inputs += [e.destinationUrn for e in job_io.inputDatasetEdges or ()]
        inputs += list(job_io.inputDatasets or ())
    dpi_props = _get(aspects, DataProcessInstancePropertiesClass)
    job_info = _get(aspects, DataJobInfoClass)
    name = (dpi_props.name if dpi_props else None) or (job_info.name if job_info else None)
    return TrainingRun(
        urn=urn,
        name=name or display_name(urn),
        missing=not aspects,
        inputs=_datasets_only(inputs),
        created_ms=dpi_props.created.time if dpi_props and dpi_props.created and dpi_props.created.time else None,
    )


def flow_of(job_urn: str) -> str:
    """The data flow (an orchestrator's job, a Dagster job) a data job (its step, a Dagster op) belongs to."""
    return str(DataJobUrn.from_string(job_urn).get_data_flow_urn())


def writer_name(job_urn: str, job: Aspects, flow: Aspects) -> str:
    """``orchestrator: flow/job`` by the names the orchestrator shows (``dagster: dbt_build/dbt_warehouse``),
    falling back to the URN's ids for a job or flow nobody described."""
    urn = DataJobUrn.from_string(job_urn)
    flow_urn = urn.get_data_flow_urn()
    job_info, flow_info = _get(job, DataJobInfoClass), _get(flow, DataFlowInfoClass)
    flow_name = (flow_info.name if flow_info else None) or flow_urn.flow_id
    job_name = (job_info.name if job_info else None) or urn.job_id
    return f"{flow_urn.orchestrator}: {flow_name}/{job_name}"


def parse_deployment(urn: str, aspects: Aspects, live_statuses: frozenset[str]) -> Deployment:
    props = _get(aspects, MLModelDeploymentPropertiesClass)
    status = str(props.status) if props and props.status else None
    recorded = props.version.versionTag if props and props.version and props.version.versionTag else None
    return Deployment(
        urn=urn,
        name=display_name(urn),
        missing=not aspects,
        status=status,
        live=bool(status in live_statuses and not is_removed(aspects)),
        version=_text(recorded),
    )


def group_refs(aspects: Aspects) -> tuple[str, ...]:
    """Registered model groups and version sets a model version belongs to."""
    props = _get(aspects, MLModelPropertiesClass)
    version = _get(aspects, VersionPropertiesClass)
    return _unique([*((props.groups or ()) if props else ()), *([version.versionSet] if version else ())])


def parse_model(
    urn: str,
    aspects: Aspects,
    *,
    groups: Mapping[str, Aspects],
    people: Mapping[str, bool],
    production_aliases: frozenset[str],
    production_tags: frozenset[str],
) -> Model:
    """A model version, with what its registered model group says about it folded in.

    The registry decides production per version (alias or stage tag on the
    version itself); owners, tags and custom properties of the group apply to
    every version, because that is where registries keep them.
    """
    props: MLModelPropertiesClass | None = _get(aspects, MLModelPropertiesClass)
    version: VersionPropertiesClass | None = _get(aspects, VersionPropertiesClass)
    group_urns = group_refs(aspects)
    group_aspects = [groups.get(g, {}) for g in group_urns]
    own_tags = tag_names(_get(aspects, GlobalTagsClass))
    aliases = tuple(a.versionTag for a in (version.aliases if version else ()) if a.versionTag)
    owners = _owners(_get(aspects, OwnershipClass), people)
    if not owners:
        owners = _unique_owners(o for g in group_aspects for o in _owners(_get(g, OwnershipClass), people))
    properties: dict[str, str] = {}
    for g in group_aspects:
        group_props = _get(g, MLModelGroupPropertiesClass)
        properties.update(group_props.customProperties if group_props else {})
    properties.update(props.customProperties if props else {})
    return Model(
        urn=urn,
        name=(props.name if props and props.name else None) or display_name(urn),
        missing=not aspects,
        removed=is_removed(aspects),
        version=version.version.versionTag if version and version.version else (props.version.versionTag if props and props.version else None),
        aliases=aliases,
        tags=_unique([*own_tags, *(t for g in group_aspects for t in tag_names(_get(g, GlobalTagsClass)))]),
        groups=group_urns,
        owners=owners,
        properties=properties,
        features=_unique(props.mlFeatures or ()) if props else (),
        training_runs=_unique(props.trainingJobs or ()) if props else (),
        deployments=_unique(props.deployments or ()) if props else (),
        registry_production=registry_marks_production(aliases, own_tags, production_aliases, production_tags),
    )


def _unique_owners(owners: Iterable[Owner]) -> tuple[Owner, ...]:
    return tuple({o.urn: o for o in owners}.values())


def _column_of(info: AssertionInfoClass) -> str | None:
    candidates: list[str] = []
    if info.customAssertion:
        candidates += [info.customAssertion.field] if info.customAssertion.field else []
        candidates += list(info.customAssertion.fields or ())
    if info.datasetAssertion:
        candidates += list(info.datasetAssertion.fields or ())
    for candidate in candidates:
        ref = field_ref(candidate)
        if ref:
            return ref[1]
    if info.fieldAssertion:
        spec = info.fieldAssertion.fieldValuesAssertion or info.fieldAssertion.fieldMetricAssertion
        if spec and spec.field:
            return simple_path(spec.field.path)
    return None


def assertion_aliases(info: AssertionInfoClass | None) -> tuple[str, ...]:
    """The names a team calls an assertion by besides its URN and description: a dbt test's ``unique_id``
    (``test.shop.not_null_orders_amount.1a2b3c``, as DataHub's dbt source keeps it) and the test's own name."""
    unique_id = (info.customProperties or {}).get("dbt_unique_id") if info else None
    if not unique_id:
        return ()
    parts = unique_id.split(".")
    return (unique_id, parts[2]) if len(parts) >= 3 and parts[0] == "test" else (unique_id,)


def _assertion_name(urn: str, info: AssertionInfoClass | None) -> str:
    if info is None:
        return display_name(urn)
    native = (info.customAssertion.nativeType if info.customAssertion else None) or (
        info.datasetAssertion.nativeType if info.datasetAssertion else None
    )
    aliases = assertion_aliases(info)
    return _text(info.description) or _text(native) or (aliases[-1] if aliases else display_name(urn))


class Run(NamedTuple):
    """What a scan reads of one assertion run (:data:`RUN_FIELDS` of the event): a large estate keeps twenty runs
    per assertion, and reading only these values, not whole events, was half of a full scan."""

    at_ms: int
    result: str | None  # the result's type; None for a run that has not completed
    unexpected: int | None
    native: Mapping[str, str] | None
    agg_value: float | None


RUN_FIELDS = ("timestampMillis", "result.type", "result.unexpectedCount", "result.nativeResults",
              "result.actualAggValue")


def _failed_rows(run: Run, info: AssertionInfoClass | None) -> int | None:
    """Rows the run found failing, only from results that count rows (never a metric's value)."""
    if run.result is None:
        return None
    if run.unexpected is not None:
        return int(run.unexpected)
    native = run.native or {}
    for key in ("failures", "failed_rows", "failedRows", "unexpected_count"):
        value = native.get(key, "")
        if value.strip().isdigit():
            return int(value)
    if run.agg_value is not None and metric_name(info) is None:
        return int(run.agg_value)
    return None


def _metric(info: AssertionInfoClass | None, run: Run | None) -> tuple[str, float] | None:
    """What a completed run measured under its own name (``row_count``, ``mean``, ``freshness_lag_hours``...)."""
    if run is None or run.result is None:
        return None
    return measurement(info, run.agg_value, run.native)


def parse_assertion(urn: str, info: AssertionInfoClass | None, runs: Iterable[Run]) -> Assertion:
    """An assertion and its latest completed result (by event time, not storage order)."""
    completed = sorted((r for r in runs if r.result is not None), key=lambda r: r.at_ms, reverse=True)
    latest = completed[0] if completed else None
    streak = [r.at_ms for r in takewhile(lambda r: r.result == latest.result, completed)] if latest else []
    return Assertion(
        urn=urn,
        name=_assertion_name(urn, info),
        column=_column_of(info) if info else None,
        result=sys.intern(str(latest.result)) if latest else None,
        failed_rows=_failed_rows(latest, info) if latest else None,
        metric=_metric(info, latest),
        bound=held_to(info),
        ran_at_ms=latest.at_ms if latest else None,
        detail=_text((latest.native or {}).get("message")) if latest else None,
        since_ms=streak[-1] if streak else None,
        aliases=assertion_aliases(info),
        history=tuple(
            AssertionResult(r.at_ms, sys.intern(str(r.result)), _failed_rows(r, info), _metric(info, r),
                            _text((r.native or {}).get("message")))
            for r in completed
        ),
    )


def assertion_kind(info: AssertionInfoClass | None) -> str | None:
    """The test's own name for what it checks (``not_null_...``, ``dbt Freshness``), else DataHub's type."""
    if info is None:
        return None
    custom, dataset = info.customAssertion, info.datasetAssertion
    # DataHub types an enum field as Union[str, AssertionTypeClass]; its value is one of that class's str constants
    return (custom and (custom.nativeType or custom.type)) or (dataset and dataset.nativeType) or cast(str, info.type)


def asserted_entity(info: AssertionInfoClass | None) -> str | None:
    """The entity (usually a dataset) an assertion checks, whichever kind of assertion it is."""
    if info is None:
        return None
    if info.entityUrn:
        return info.entityUrn
    if info.datasetAssertion and info.datasetAssertion.dataset:
        return info.datasetAssertion.dataset
    for part in (info.customAssertion, info.freshnessAssertion, info.volumeAssertion, info.sqlAssertion,
                 info.fieldAssertion, info.schemaAssertion):
        entity = getattr(part, "entity", None) if part is not None else None
        if entity:
            return entity
    return None
