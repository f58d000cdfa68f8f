"""apply_patch merges DataHub PATCH proposals the way GMS's aspect templates do."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from datahub.emitter.mce_builder import SYSTEM_ACTOR
from datahub.emitter.mcp_patch_builder import MetadataPatchProposal
from datahub.emitter.serialization_helper import post_json_transform, pre_json_transform
from datahub.metadata.schema_classes import (
    ASPECT_NAME_MAP,
    EditableSchemaMetadataClass,
    FineGrainedLineageClass,
    GenericAspectClass,
    GlobalTagsClass,
    GlossaryTermAssociationClass,
    GlossaryTermsClass,
    MetadataAttributionClass,
    OwnerClass,
    OwnershipClass,
    OwnershipTypeClass,
    StructuredPropertiesClass,
    TagAssociationClass,
    UpstreamClass,
    UpstreamLineageClass,
    _Aspect,
)
from datahub.specific.datajob import DataJobPatchBuilder
from datahub.specific.dataset import DatasetPatchBuilder

from recall_dagster.graph.patch import apply_patch, decode_patch

PG = "urn:li:dataset:(urn:li:dataPlatform:postgres,warehouse.marts.fct_transactions,PROD)"
DBT = "urn:li:dataset:(urn:li:dataPlatform:dbt,warehouse.marts.fct_transactions,PROD)"
RAW = "urn:li:dataset:(urn:li:dataPlatform:postgres,warehouse.raw.transactions,PROD)"
ODD = "urn:li:dataset:(urn:li:dataPlatform:s3,landing/tx~v2/part.csv,PROD)"  # '/' and '~' need escaping
JOB = "urn:li:dataJob:(urn:li:dataFlow:(dagster,etl,PROD),load)"


def _field(dataset: str, name: str) -> str:
    return f"urn:li:schemaField:({dataset},{name})"


def _patched(builder: MetadataPatchProposal, aspect_name: str, current: _Aspect | None = None) -> Any:
    """Every proposal the builder made for the aspect, applied in order as LiteGraph does.

    Building the SDK class from the result is the validation every case shares.
    """
    document = None if current is None else pre_json_transform(current.to_obj())
    for proposal in builder.build():
        if proposal.aspectName == aspect_name:
            operations, array_primary_keys = decode_patch(proposal.aspect)
            document = apply_patch(aspect_name, document, operations, array_primary_keys)
    return ASPECT_NAME_MAP[aspect_name].from_obj(post_json_transform(document))


def test_upstreams_are_keyed_by_dataset_with_escaped_urns() -> None:
    current = UpstreamLineageClass(upstreams=[UpstreamClass(dataset=RAW, type="TRANSFORMED")])
    builder = (
        DatasetPatchBuilder(PG)
        .add_upstream_lineage(UpstreamClass(dataset=DBT, type="TRANSFORMED"))
        .add_upstream_lineage(UpstreamClass(dataset=ODD, type="COPY"))
        .add_upstream_lineage(UpstreamClass(dataset=RAW, type="COPY"))  # same key: replaced in place
        .remove_upstream_lineage(JOB)  # nothing there: a no-op, as in GMS
    )
    assert "landing~1tx~0v2~1part.csv" in builder.build()[0].aspect.value.decode()  # type: ignore[union-attr]

    merged = _patched(builder, "upstreamLineage", current)
    assert [(u.dataset, u.type) for u in merged.upstreams] == [(RAW, "COPY"), (DBT, "TRANSFORMED"), (ODD, "COPY")]
    assert _patched(builder, "upstreamLineage", merged) == merged  # idempotent

    removed = _patched(DatasetPatchBuilder(PG).remove_upstream_lineage(ODD), "upstreamLineage", merged)
    assert [u.dataset for u in removed.upstreams] == [RAW, DBT]


def test_fine_grained_lineage_is_keyed_by_operation_downstream_query_upstream() -> None:
    lineage = FineGrainedLineageClass(
        upstreamType="FIELD_SET",
        upstreams=[_field(DBT, "amount"), _field(RAW, "amount")],
        downstreamType="FIELD",
        downstreams=[_field(PG, "amount")],
        transformOperation="SUM",
        confidenceScore=0.8,
    )
    builder = DatasetPatchBuilder(PG).add_fine_grained_lineage(lineage)
    # /fineGrainedLineages/<transformOperation>/<downstream>/<query, NONE when unset>/<upstream>
    assert f"/fineGrainedLineages/SUM/{_field(PG, 'amount')}/NONE/{_field(DBT, 'amount')}" in (
        builder.build()[0].aspect.value.decode()  # type: ignore[union-attr]
    )

    merged = _patched(builder, "upstreamLineage")
    (entry,) = merged.fineGrainedLineages
    assert (entry.upstreams, entry.downstreams) == (lineage.upstreams, lineage.downstreams)
    assert (entry.transformOperation, entry.confidenceScore, entry.query) == ("SUM", 0.8, None)
    assert (entry.upstreamType, entry.downstreamType) == ("FIELD_SET", "FIELD")

    one_less = FineGrainedLineageClass(
        upstreamType="FIELD_SET",
        upstreams=[_field(RAW, "amount")],
        downstreamType="FIELD",
        downstreams=[_field(PG, "amount")],
        transformOperation="SUM",
    )
    narrowed = _patched(DatasetPatchBuilder(PG).remove_fine_grained_lineage(one_less), "upstreamLineage", merged)
    assert [e.upstreams for e in narrowed.fineGrainedLineages] == [[_field(DBT, "amount")]]


def test_a_stored_lineage_with_several_downstreams_cannot_be_patched() -> None:
    current = UpstreamLineageClass(
        upstreams=[],
        fineGrainedLineages=[
            FineGrainedLineageClass(
                upstreamType="FIELD_SET",
                upstreams=[_field(RAW, "a")],
                downstreamType="FIELD_SET",
                downstreams=[_field(PG, "a"), _field(PG, "b")],
            )
        ],
    )
    with pytest.raises(ValueError, match="upstreamLineage: .*2 downstreams"):
        _patched(DatasetPatchBuilder(PG).add_upstream_lineage(UpstreamClass(DBT, "COPY")), "upstreamLineage", current)


def test_tags_follow_the_generic_patch_keys_including_attribution() -> None:
    source = "urn:li:dataHubAction:classifier"
    current = GlobalTagsClass(tags=[TagAssociationClass("urn:li:tag:pii"), TagAssociationClass("urn:li:tag:old")])
    attributed = TagAssociationClass(
        "urn:li:tag:pii", attribution=MetadataAttributionClass(time=1, actor=SYSTEM_ACTOR, source=source)
    )
    builder = DatasetPatchBuilder(PG).add_tag(TagAssociationClass("urn:li:tag:gold")).add_tag(attributed)
    merged = _patched(builder, "globalTags", current)
    assert [(t.tag, t.attribution and t.attribution.source) for t in merged.tags] == [
        ("urn:li:tag:pii", None),
        ("urn:li:tag:old", None),
        ("urn:li:tag:gold", None),
        ("urn:li:tag:pii", source),
    ]

    only_that_source = _patched(DatasetPatchBuilder(PG).remove_tag("urn:li:tag:pii", source), "globalTags", merged)
    assert [t.tag for t in only_that_source.tags] == ["urn:li:tag:pii", "urn:li:tag:old", "urn:li:tag:gold"]
    every_source = _patched(DatasetPatchBuilder(PG).remove_tag("urn:li:tag:pii"), "globalTags", merged)
    assert [t.tag for t in every_source.tags] == ["urn:li:tag:old", "urn:li:tag:gold"]


def test_plain_tag_patches_use_the_template_key() -> None:
    operations = [
        {"op": "add", "path": "/tags/urn:li:tag:gold", "value": {"tag": "urn:li:tag:gold"}},
        {"op": "remove", "path": "/tags/urn:li:tag:pii"},
    ]
    merged = apply_patch("globalTags", {"tags": [{"tag": "urn:li:tag:pii"}]}, operations)
    assert GlobalTagsClass.from_obj(merged) == GlobalTagsClass(tags=[TagAssociationClass("urn:li:tag:gold")])


def test_terms_start_from_defaults_and_are_removed_by_urn() -> None:
    term = "urn:li:glossaryTerm:revenue"
    added = _patched(DatasetPatchBuilder(PG).add_term(GlossaryTermAssociationClass(term)), "glossaryTerms")
    assert isinstance(added, GlossaryTermsClass) and [t.urn for t in added.terms] == [term]
    assert (added.auditStamp.time, added.auditStamp.actor) == (0, SYSTEM_ACTOR)  # deterministic, GMS's actor
    assert _patched(DatasetPatchBuilder(PG).remove_term(term), "glossaryTerms", added).terms == []


def test_owners_are_keyed_by_owner_and_type() -> None:
    alice = "urn:li:corpuser:alice"
    builder = (
        DatasetPatchBuilder(PG)
        .add_owner(OwnerClass(alice, OwnershipTypeClass.TECHNICAL_OWNER))
        .add_owner(OwnerClass(alice, OwnershipTypeClass.DATA_STEWARD))
        .add_owner(OwnerClass("urn:li:corpuser:bob", OwnershipTypeClass.TECHNICAL_OWNER))
    )
    merged = _patched(builder, "ownership")
    assert isinstance(merged, OwnershipClass) and len(merged.owners) == 3
    removed = _patched(DatasetPatchBuilder(PG).remove_owner(alice), "ownership", merged)
    assert [o.owner for o in removed.owners] == ["urn:li:corpuser:bob"]

    legacy = [{"op": "add", "path": f"/owners/{alice}/DATAOWNER", "value": {"owner": alice, "type": "DATAOWNER"}}]
    with_legacy = OwnershipClass.from_obj(apply_patch("ownership", pre_json_transform(merged.to_obj()), legacy))
    # Elements come back grouped by key, so alice's new entry joins her others.
    assert [(o.owner, o.type) for o in with_legacy.owners] == [
        (alice, "TECHNICAL_OWNER"),
        (alice, "DATA_STEWARD"),
        (alice, "DATAOWNER"),
        ("urn:li:corpuser:bob", "TECHNICAL_OWNER"),
    ]


def test_structured_properties_are_keyed_by_property() -> None:
    tier = "urn:li:structuredProperty:io.recall.tier"
    first = _patched(DatasetPatchBuilder(PG).set_structured_property(tier, "gold"), "structuredProperties")
    again = _patched(DatasetPatchBuilder(PG).set_structured_property(tier, "silver"), "structuredProperties", first)
    assert isinstance(again, StructuredPropertiesClass)
    assert [(p.propertyUrn, p.values) for p in again.properties] == [(tier, ["silver"])]
    removed = _patched(DatasetPatchBuilder(PG).remove_structured_property(tier), "structuredProperties", again)
    assert removed.properties == []


def test_schema_field_tags_and_terms_are_keyed_by_field_path() -> None:
    builder = DatasetPatchBuilder(PG)
    builder.for_field("payload/amount").add_tag(TagAssociationClass("urn:li:tag:pii")).add_term(
        GlossaryTermAssociationClass("urn:li:glossaryTerm:money")
    )
    builder.for_field("id").add_tag(TagAssociationClass("urn:li:tag:key"))
    merged = _patched(builder, "editableSchemaMetadata")
    assert isinstance(merged, EditableSchemaMetadataClass)
    amount, key = merged.editableSchemaFieldInfo
    assert (amount.fieldPath, key.fieldPath) == ("payload/amount", "id")  # the key came from the path alone
    assert [t.tag for t in amount.globalTags.tags] == ["urn:li:tag:pii"]  # type: ignore[union-attr]
    assert [t.urn for t in amount.glossaryTerms.terms] == ["urn:li:glossaryTerm:money"]  # type: ignore[union-attr]

    untag = DatasetPatchBuilder(PG).for_field("payload/amount").remove_tag("urn:li:tag:pii").parent()
    untagged = _patched(untag, "editableSchemaMetadata", merged)
    assert untagged.editableSchemaFieldInfo[0].globalTags.tags == []
    assert untagged.editableSchemaFieldInfo[1] == key


def test_siblings_and_properties_as_the_dbt_source_sends_them() -> None:
    siblings = _patched(DatasetPatchBuilder(PG).add_sibling(DBT, primary=True), "siblings")
    assert (siblings.siblings, siblings.primary) == ([DBT], True)
    assert _patched(DatasetPatchBuilder(PG).add_sibling(DBT), "siblings", siblings) == siblings

    key = "dbt/model~1"  # escaped as dbt~1model~01, which only unescapes right as ~1 first, then ~0
    builder = DatasetPatchBuilder(PG).set_display_name("fct_transactions").add_custom_property(key, "x")
    assert "/customProperties/dbt~1model~01" in builder.build()[0].aspect.value.decode()  # type: ignore[union-attr]
    properties = _patched(builder, "datasetProperties")
    assert (properties.name, properties.customProperties) == ("fct_transactions", {key: "x"})
    removed = _patched(DatasetPatchBuilder(PG).remove_custom_property(key), "datasetProperties", properties)
    assert removed.customProperties == {}


def test_job_edges_are_keyed_by_destination() -> None:
    builder = DataJobPatchBuilder(JOB).add_input_dataset(RAW).add_output_dataset(PG)
    merged = _patched(builder, "dataJobInputOutput")
    assert _patched(builder, "dataJobInputOutput", merged) == merged
    assert [e.destinationUrn for e in merged.inputDatasetEdges] == [RAW]
    assert [e.destinationUrn for e in merged.outputDatasetEdges] == [PG]


def test_the_current_aspect_is_left_untouched() -> None:
    current = {"tags": [{"tag": "urn:li:tag:pii"}]}
    before = copy.deepcopy(current)
    apply_patch("globalTags", current, [{"op": "remove", "path": "/tags/urn:li:tag:pii"}])
    assert current == before


def _add(path: str, value: Any) -> dict[str, Any]:
    return {"op": "add", "path": path, "value": value}


@pytest.mark.parametrize(
    ("aspect_name", "current", "operation", "message"),
    [
        (
            "mlModelProperties",
            {"mlFeatures": ["urn:li:mlFeature:(t,a)"]},
            _add("/mlFeatures/urn:li:mlFeature:(t,b)", "urn:li:mlFeature:(t,b)"),
            "mlModelProperties: cannot add /mlFeatures/urn:li:mlFeature:(t,b): "
            "'mlFeatures' is an array this aspect does not key",
        ),
        ("status", None, _add("/removd", True), "status: /removd is not a field of StatusClass"),
        ("status", None, _add("/removed/x", 1), "status: cannot add /removed/x: 'removed' holds False"),
        ("status", None, _add("removed", True), "status: cannot add removed: a path is a JSON pointer"),
        (
            "status",
            None,
            {"op": "move", "path": "/removed", "from": "/x"},
            "status: cannot move /removed: unsupported operation 'move'",
        ),
        (
            "status",
            None,
            {"op": "add", "path": "/removed"},
            "status: cannot add /removed: the operation has no value",
        ),
        (
            "datasetProperties",
            None,
            {"op": "replace", "path": "/description", "value": "d"},
            "datasetProperties: cannot replace /description: there is no 'description' to replace",
        ),
        (
            "upstreamLineage",
            None,
            _add(f"/upstreams/{DBT}", {"dataset": DBT}),
            f"upstreamLineage: patching /upstreams/{DBT} gives an aspect that does not fit "
            "UpstreamLineageClass: com.linkedin.pegasus2avro.dataset.Upstream is missing required field: type",
        ),
        ("operation", None, _add("/operationType", "INSERT"), "operation is a timeseries aspect"),
        ("noSuchAspect", None, _add("/x", 1), "'noSuchAspect' is not an aspect"),
    ],
)
def test_what_cannot_be_applied_names_the_aspect_and_path(
    aspect_name: str, current: dict[str, Any] | None, operation: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError) as caught:
        apply_patch(aspect_name, current, [operation])
    assert message in str(caught.value)


def _payload(value: Any) -> GenericAspectClass:
    return GenericAspectClass(value=json.dumps(value).encode(), contentType="application/json-patch+json")


@pytest.mark.parametrize(
    ("aspect", "message"),
    [
        (None, "carries no patch"),
        (GenericAspectClass(value=b"[{", contentType="application/json-patch+json"), "not JSON"),
        (_payload({"removed": True}), "a whole aspect is written with UPSERT"),
        (_payload({"arrayPrimaryKeys": {"tags": "tag"}, "patch": []}), "arrayPrimaryKeys must map"),
    ],
)
def test_what_is_not_a_patch_is_refused(aspect: GenericAspectClass | None, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        decode_patch(aspect)
