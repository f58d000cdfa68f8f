"""MCPs for what no DataHub source produces, derived from the registry and the real runs.

Deployments, owners, glossary terms, the features each model
version consumed (from its MLflow run), the warehouse tables each training run
read, and the Feast exports the feast source names as its
features' sources but does not describe (schema, owners, freshness, and the
column lineage back to the warehouse). Features and feature tables themselves
come from DataHub's feast source. Aspects that
an official source also writes (``mlModelProperties``, ``versionProperties``,
``dataProcessInstanceInput``) are merged with what the graph holds, so running
enrichment after every re-ingestion restores it without clobbering the source.
Pure: the graph's current aspects and the registry's state come in as values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from datahub.emitter import mce_builder as builder
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata import schema_classes as m

from ml_models.feature_store import PROJECT, export_columns, source_path
from ml_models.registry import FeatureRegistry, ModelSpec, Owner
from seed.ingest.mlflow_state import VersionState

MLFLOW = "mlflow"
FEAST_ACTOR = "urn:li:corpuser:feast"
_FIELD_TYPES = {"double": m.NumberTypeClass, "string": m.StringTypeClass, "timestamp": m.TimeTypeClass}


def dataset_urn(registry: FeatureRegistry, relation: str) -> str:
    return builder.make_dataset_urn(registry.warehouse_platform, relation, registry.env)


def table_urn(registry: FeatureRegistry, table_name: str) -> str:
    return dataset_urn(registry, registry.warehouse_name(registry.table(table_name)))


@dataclass(frozen=True)
class Export:
    """A feature view's export file as it lies on disk: its columns (name, Arrow type) and when it was written."""

    view: str
    columns: tuple[tuple[str, str], ...]
    written_ms: int


def feature_urn(ref: str) -> str:
    """The URN DataHub's feast source gives the feature a Feast reference (``view:feature``) names."""
    view, _, feature = ref.partition(":")
    return builder.make_ml_feature_urn(f"{PROJECT}.{view}", feature)


def export_urn(registry: FeatureRegistry, view: str) -> str:
    """The dataset DataHub's feast source names as the view's batch source (its path, dots for slashes)."""
    return builder.make_dataset_urn("file", source_path(view).replace("://", ".").replace("/", "."), registry.env)


def model_version_urn(registry: FeatureRegistry, registered_name: str, version: int) -> str:
    return builder.make_ml_model_urn(MLFLOW, f"{registered_name}_{version}", registry.env)


def model_group_urn(registry: FeatureRegistry, registered_name: str) -> str:
    return builder.make_ml_model_group_urn(MLFLOW, registered_name, registry.env)


def deployment_urn(registry: FeatureRegistry, platform: str, name: str) -> str:
    return builder.make_ml_model_deployment_urn(platform, name, registry.env)


def run_urn(run_id: str) -> str:
    from datahub.api.entities.dataprocess.dataprocess_instance import DataProcessInstance

    return str(DataProcessInstance(id=run_id, orchestrator=MLFLOW).urn)


def _mcp(urn: str, aspect: m._Aspect) -> MetadataChangeProposalWrapper:
    return MetadataChangeProposalWrapper(entityUrn=urn, aspect=aspect)


def _ownership(owners: Iterable[Owner]) -> m.OwnershipClass:
    return m.OwnershipClass(owners=[m.OwnerClass(owner=o.id, type=o.type) for o in owners])


def _terms(terms: Iterable[str]) -> m.GlossaryTermsClass:
    stamp = m.AuditStampClass(time=0, actor="urn:li:corpuser:recall")
    return m.GlossaryTermsClass(terms=[m.GlossaryTermAssociationClass(urn=t) for t in terms], auditStamp=stamp)


def catalog_mcps(registry: FeatureRegistry) -> list[MetadataChangeProposalWrapper]:
    """Deployments, glossary terms, and the owners of warehouse tables."""
    out: list[MetadataChangeProposalWrapper] = []
    terms: set[str] = set()
    for model in registry.models:
        terms.update(model.glossary_terms)
        for deployment in model.deployments:
            out.append(_mcp(deployment_urn(registry, deployment.platform, deployment.name),
                            m.MLModelDeploymentPropertiesClass(
                                description=f"{model.name} endpoint in {deployment.environment}",
                                status=deployment.status,
                                customProperties={"environment": deployment.environment, "serves": deployment.serves},
                            )))
    for name, table in sorted(registry.tables.items()):
        urn = table_urn(registry, name)
        if table.owners:
            out.append(_mcp(urn, _ownership(table.owners)))
        if table.glossary_terms:
            out.append(_mcp(urn, _terms(table.glossary_terms)))
            terms.update(table.glossary_terms)
        if table.column_terms:
            fields = [
                m.EditableSchemaFieldInfoClass(fieldPath=column, glossaryTerms=_terms(column_terms))
                for column, column_terms in sorted(table.column_terms.items())
            ]
            out.append(_mcp(urn, m.EditableSchemaMetadataClass(editableSchemaFieldInfo=fields)))
            terms.update(t for column_terms in table.column_terms.values() for t in column_terms)
    for term in sorted(terms):
        name = term.split(":", 3)[-1]
        out.append(_mcp(term, m.GlossaryTermInfoClass(
            name=name, definition=f"{name}, as declared in the feature registry", termSource="INTERNAL",
        )))
    return out


def model_mcps(
    registry: FeatureRegistry,
    versions: Iterable[VersionState],
    deployed: Mapping[str, int],
    current: Mapping[str, Mapping[str, m._Aspect]],
) -> list[MetadataChangeProposalWrapper]:
    """Merge features, deployments, owners and inputs into what the mlflow source wrote.

    ``deployed`` maps a deployment name to the model version it runs; ``current``
    holds the graph's aspects for the model and run URNs. A version the mlflow
    source has not ingested yet is skipped rather than invented.
    """
    specs = {spec.registered_name: spec for spec in registry.models}
    out: list[MetadataChangeProposalWrapper] = []
    for state in versions:
        spec = specs.get(state.registered_name)
        urn = model_version_urn(registry, state.registered_name, state.version)
        props = current.get(urn, {}).get("mlModelProperties")
        if spec is None or not isinstance(props, m.MLModelPropertiesClass):
            continue
        out.extend(_version_mcps(registry, spec, state, deployed, props, current.get(urn, {})))
        if state.run_id:
            out.extend(_run_input_mcps(registry, state, current.get(run_urn(state.run_id), {})))
    for spec in registry.models:
        group = model_group_urn(registry, spec.registered_name)
        out.append(_mcp(group, _ownership(spec.owners)))
        out.append(_mcp(group, _terms(spec.glossary_terms)))
    return out


def _version_mcps(
    registry: FeatureRegistry,
    spec: ModelSpec,
    state: VersionState,
    deployed: Mapping[str, int],
    props: m.MLModelPropertiesClass,
    aspects: Mapping[str, m._Aspect],
) -> list[MetadataChangeProposalWrapper]:
    urn = model_version_urn(registry, state.registered_name, state.version)
    merged = m.MLModelPropertiesClass.from_obj(props.to_obj())
    merged.mlFeatures = [feature_urn(ref) for ref in state.feature_refs]
    merged.deployments = [
        deployment_urn(registry, d.platform, d.name) for d in spec.deployments if deployed.get(d.name) == state.version
    ]
    merged.customProperties = {**(props.customProperties or {}), **spec.properties}
    return [_mcp(urn, merged), _mcp(urn, _ownership(spec.owners)), _mcp(urn, _terms(spec.glossary_terms))]


def _run_input_mcps(
    registry: FeatureRegistry, state: VersionState, aspects: Mapping[str, m._Aspect]
) -> list[MetadataChangeProposalWrapper]:
    """Point the run straight at the warehouse tables it read, keeping the source's own edges."""
    existing = aspects.get("dataProcessInstanceInput")
    edges = list(existing.inputEdges or []) if isinstance(existing, m.DataProcessInstanceInputClass) else []
    legacy = list(existing.inputs) if isinstance(existing, m.DataProcessInstanceInputClass) else []
    known = {edge.destinationUrn for edge in edges}
    for name in state.input_names:
        urn = dataset_urn(registry, name)
        if urn not in known:
            edges.append(m.EdgeClass(destinationUrn=urn))
            known.add(urn)
    return [_mcp(run_urn(state.run_id or ""), m.DataProcessInstanceInputClass(inputs=legacy, inputEdges=edges))]


def export_mcps(registry: FeatureRegistry, exports: Iterable[Export]) -> list[MetadataChangeProposalWrapper]:
    """Each Feast export described as a dataset: owners, schema, when Feast wrote it, and column lineage
    from the warehouse columns it reads, so a closure walks feature → export → warehouse column."""
    tables = {table.name: table for table in registry.feature_tables}
    out: list[MetadataChangeProposalWrapper] = []
    for export in exports:
        table = tables.get(export.view)
        if table is None:
            continue
        urn = export_urn(registry, export.view)
        out.append(_mcp(urn, m.DatasetPropertiesClass(
            name=source_path(export.view), description=f"Feast offline source of {export.view}: {table.description}",
        )))
        out.append(_mcp(urn, _ownership(table.owners)))
        out.append(_mcp(urn, m.OperationClass(
            timestampMillis=export.written_ms, lastUpdatedTimestamp=export.written_ms,
            operationType=m.OperationTypeClass.CREATE, actor=FEAST_ACTOR,
        )))
        out.append(_mcp(urn, m.SchemaMetadataClass(
            schemaName=export.view, platform=builder.make_data_platform_urn("file"), version=0, hash="",
            platformSchema=m.OtherSchemaClass(rawSchema=""),
            fields=[m.SchemaFieldClass(fieldPath=name, nativeDataType=arrow,
                                       type=m.SchemaFieldDataTypeClass(type=_field_type(arrow)()))
                    for name, arrow in export.columns],
        )))
        written = {name for name, _ in export.columns}
        reads = [c for c in export_columns(table) if c.name in written]
        sources = list(dict.fromkeys(table_urn(registry, c.table) for c in reads))
        out.append(_mcp(urn, m.UpstreamLineageClass(
            upstreams=[m.UpstreamClass(dataset=u, type=m.DatasetLineageTypeClass.TRANSFORMED) for u in sources],
            fineGrainedLineages=[
                m.FineGrainedLineageClass(
                    upstreamType=m.FineGrainedLineageUpstreamTypeClass.FIELD_SET,
                    upstreams=[builder.make_schema_field_urn(table_urn(registry, c.table), c.column)],
                    downstreamType=m.FineGrainedLineageDownstreamTypeClass.FIELD,
                    downstreams=[builder.make_schema_field_urn(urn, c.name)],
                )
                for c in reads
            ],
        )))
    return out


def _field_type(arrow: str) -> type:
    return next((kind for prefix, kind in _FIELD_TYPES.items() if arrow.startswith(prefix)), m.StringTypeClass)
