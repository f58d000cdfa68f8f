"""The edge index is read from the SDK's @Relationship annotations, not hand-listed."""

from __future__ import annotations

import pytest
from datahub.metadata.schema_classes import (
    ChangeAuditStampsClass,
    ChartInfoClass,
    FineGrainedLineageClass,
    UpstreamClass,
    UpstreamLineageClass,
)
from graph_estate import Estate

from recall_dagster.graph.relationships import extract_targets, fields_for, relationship_index

# DESIGN §4: (relationship, aspect, field path, target type, is lineage)
DESIGN_TABLE = [
    ("Consumes", "mlModelProperties", "mlFeatures/*", "mlFeature", True),
    ("TrainedBy", "mlModelProperties", "trainingJobs/*", "dataProcessInstance", True),
    ("MemberOf", "mlModelProperties", "groups/*", "mlModelGroup", True),
    ("DeployedTo", "mlModelProperties", "deployments/*", "mlModelDeployment", False),
    ("DerivedFrom", "mlFeatureProperties", "sources/*", "dataset", True),
    ("Contains", "mlFeatureTableProperties", "mlFeatures/*", "mlFeature", False),
    ("DataProcessInstanceConsumes", "dataProcessInstanceInput", "inputEdges/*/destinationUrn", "dataset", True),
    ("Consumes", "dataProcessInstanceInput", "inputs/*", "dataset", False),
    ("DataProcessInstanceProduces", "dataProcessInstanceOutput", "outputEdges/*/destinationUrn", "dataset", True),
    ("DownstreamOf", "upstreamLineage", "upstreams/*/dataset", "dataset", True),
]


@pytest.mark.parametrize(("relationship", "aspect", "path", "target", "lineage"), DESIGN_TABLE)
def test_index_holds_every_edge_the_design_relies_on(
    relationship: str, aspect: str, path: str, target: str, lineage: bool
) -> None:
    matches = [f for f in fields_for(relationship, aspect_name=aspect) if f.field_path == path]
    assert len(matches) == 1, [f.field_path for f in fields_for(relationship, aspect_name=aspect)]
    assert target in matches[0].target_types
    assert matches[0].is_lineage is lineage


def test_one_name_on_several_aspects_stays_distinct_and_filters_by_source_type() -> None:
    consumes = {(f.aspect_name, f.field_path) for f in relationship_index()["Consumes"]}
    assert {("mlModelProperties", "mlFeatures/*"), ("dataProcessInstanceInput", "inputs/*")} <= consumes
    by_model = fields_for("Consumes", entity_type="mlModel")
    assert [(f.aspect_name, f.field_path) for f in by_model] == [("mlModelProperties", "mlFeatures/*")]
    assert [f.aspect_name for f in fields_for("Consumes", entity_type="dataProcessInstance")] == [
        "dataProcessInstanceInput"
    ]


def test_unknown_relationship_names_what_exists() -> None:
    with pytest.raises(ValueError, match="DownstreamOf"):
        fields_for("DownstreamOff")


def test_extraction_reads_real_aspects(estate: Estate) -> None:
    aspects = {mcp.entityUrn: mcp.aspect for mcp in estate.mcps()}
    assert extract_targets(aspects[estate.model], "Consumes") == [estate.total, estate.count]
    assert extract_targets(aspects[estate.model], "DeployedTo") == [estate.deployment]
    assert extract_targets(aspects[estate.model], "TrainedBy") == [estate.run]
    assert extract_targets(aspects[estate.model], "MemberOf") == [estate.group]
    assert extract_targets(aspects[estate.model], "DerivedFrom") == []
    assert extract_targets(aspects[estate.count], "DerivedFrom") == [estate.mart, estate.raw]
    assert extract_targets(aspects[estate.table], "Contains") == [estate.total, estate.count]
    assert extract_targets(aspects[estate.run], "Consumes") == [estate.raw]
    assert extract_targets(aspects[estate.run], "DataProcessInstanceConsumes") == [estate.mart]
    assert extract_targets(aspects[estate.mart], "DownstreamOf") == [estate.raw]


def test_nested_and_union_paths_resolve(estate: Estate) -> None:
    column = f"urn:li:schemaField:({estate.raw},order_id)"
    lineage = UpstreamLineageClass(
        upstreams=[UpstreamClass(dataset=estate.raw, type="TRANSFORMED")],
        fineGrainedLineages=[
            FineGrainedLineageClass(upstreamType="FIELD_SET", downstreamType="FIELD", upstreams=[column])
        ],
    )
    # Column-level upstreams carry the same name; callers filter by entity type.
    assert extract_targets(lineage, "DownstreamOf") == [estate.raw, column]
    # chartInfo.inputs is annotated on the union branch ("/*/string").
    chart = ChartInfoClass(title="t", description="d", lastModified=ChangeAuditStampsClass(), inputs=[estate.raw])
    assert extract_targets(chart, "Consumes") == [estate.raw]
