"""Where DataHub keeps a fact: legacy and current shapes both read."""

from __future__ import annotations

import datahub.metadata.schema_classes as dh

from recall_dagster.estate import Assertion, parse
from recall_dagster.graph.port import values_at


def aspects(*items):
    return {a.ASPECT_NAME: a for a in items}


def test_training_inputs_from_every_shape():
    dpi = parse.parse_training_run(
        "urn:li:dataProcessInstance:r",
        aspects(
            dh.DataProcessInstanceInputClass(
                inputs=["urn:li:dataset:legacy", "urn:li:mlModel:not_a_dataset"],
                inputEdges=[dh.EdgeClass(destinationUrn="urn:li:dataset:edge")],
            )
        ),
    )
    assert dpi.inputs == ("urn:li:dataset:edge", "urn:li:dataset:legacy")
    job = parse.parse_training_run(
        "urn:li:dataJob:(urn:li:dataFlow:(airflow,train,PROD),fit)",
        aspects(
            dh.DataJobInputOutputClass(
                inputDatasets=["urn:li:dataset:a"],
                outputDatasets=[],
                inputDatasetEdges=[dh.EdgeClass(destinationUrn="urn:li:dataset:b")],
            ),
            dh.DataJobInfoClass(name="fit", type="COMMAND"),
        ),
    )
    assert (job.name, job.inputs) == ("fit", ("urn:li:dataset:b", "urn:li:dataset:a"))
    assert parse.parse_training_run("urn:li:dataProcessInstance:gone", {}).missing


def test_freshness_property_formats():
    def updated(value: str) -> int | None:
        props = dh.DatasetPropertiesClass(customProperties={"refreshed": value})
        d = parse.parse_dataset("urn:li:dataset:x", aspects(props), people={}, glossary={}, freshness_property="refreshed")
        return d.property_updated_ms

    assert updated("1748649600") == 1748649600000
    assert updated("1748649600000") == 1748649600000
    assert updated("2025-05-31T00:00:00Z") == 1748649600000
    assert updated("2025-05-31T02:00:00+02:00") == 1748649600000
    assert updated("last tuesday") is None


def test_fields_merge_editable_metadata_and_simplify_v2_paths():
    schema = dh.SchemaMetadataClass(
        schemaName="t",
        platform="urn:li:dataPlatform:bigquery",
        version=0,
        hash="",
        platformSchema=dh.OtherSchemaClass(rawSchema=""),
        fields=[
            dh.SchemaFieldClass(
                fieldPath="[version=2.0].[type=struct].[type=string].email",
                type=dh.SchemaFieldDataTypeClass(dh.StringTypeClass()),
                nativeDataType="STRING",
            ),
            dh.SchemaFieldClass(fieldPath="n", type=dh.SchemaFieldDataTypeClass(dh.NumberTypeClass()), nativeDataType=""),
        ],
    )
    editable = dh.EditableSchemaMetadataClass(
        editableSchemaFieldInfo=[
            dh.EditableSchemaFieldInfoClass(
                fieldPath="email",
                globalTags=dh.GlobalTagsClass([dh.TagAssociationClass("urn:li:tag:PII")]),
                glossaryTerms=dh.GlossaryTermsClass(
                    [dh.GlossaryTermAssociationClass("urn:li:glossaryTerm:abc123")], dh.AuditStampClass(0, "urn:li:corpuser:x")
                ),
            )
        ]
    )
    d = parse.parse_dataset(
        "urn:li:dataset:x", aspects(schema, editable), people={}, glossary={"urn:li:glossaryTerm:abc123": "PII"},
        freshness_property=None,
    )
    email, n = d.fields
    assert (email.path, email.type, email.tags, [t.name for t in email.terms]) == ("email", "STRING", ("PII",), ["PII"])
    assert n.type == "NumberType"  # no native type: DataHub's own
    assert parse.referenced_terms(aspects(schema, editable)) == {"urn:li:glossaryTerm:abc123"}


def test_people_who_left():
    assert parse.person_active({})  # an owner nobody created is still an owner
    assert not parse.person_active(aspects(dh.StatusClass(removed=True)))
    assert not parse.person_active(aspects(dh.CorpUserInfoClass(active=False)))
    assert not parse.person_active(aspects(dh.CorpUserStatusClass("SUSPENDED", dh.AuditStampClass(0, "urn:li:corpuser:x"))))
    assert parse.person_active(aspects(dh.CorpUserInfoClass(active=True)))


def test_model_inherits_group_owners_and_reads_registry_marks():
    group = "urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,fraud,PROD)"
    model = parse.parse_model(
        "urn:li:mlModel:(urn:li:dataPlatform:mlflow,fraud_4,PROD)",
        aspects(
            dh.MLModelPropertiesClass(groups=[group], customProperties={"team": "risk"}),
            dh.GlobalTagsClass([dh.TagAssociationClass("urn:li:tag:mlflow_production")]),
        ),
        groups={
            group: aspects(
                dh.OwnershipClass([dh.OwnerClass("urn:li:corpuser:eve", "TECHNICAL_OWNER")]),
                dh.MLModelGroupPropertiesClass(customProperties={"team": "fraud", "pii_justification": "DPIA-9"}),
            )
        },
        people={"urn:li:corpuser:eve": True},
        production_aliases=frozenset({"production"}),
        production_tags=frozenset({"mlflow_production"}),
    )
    assert model.registry_production and model.has_active_owner
    assert model.properties == {"team": "risk", "pii_justification": "DPIA-9"}  # the version wins
    assert model.name == "fraud_4"


def runs(events: list[dh.AssertionRunEventClass]) -> list[parse.Run]:
    """What a scan reads of each event, taken from the SDK's objects as the GMS adapter takes it."""
    return [parse.Run(*values_at(e, parse.RUN_FIELDS)) for e in events]


def test_latest_assertion_result_by_event_time():
    info = dh.AssertionInfoClass(
        type="DATASET",
        datasetAssertion=dh.DatasetAssertionInfoClass(
            dataset="urn:li:dataset:x", scope="DATASET_COLUMN", operator="NOT_NULL",
            fields=["urn:li:schemaField:(urn:li:dataset:x,price)"],
        ),
    )

    def event(ts: int, kind: str, **result) -> dh.AssertionRunEventClass:
        return dh.AssertionRunEventClass(
            timestampMillis=ts, runId=str(ts), asserteeUrn="urn:li:dataset:x", status="COMPLETE",
            assertionUrn="urn:li:assertion:a", result=dh.AssertionResultClass(type=kind, **result),
        )

    a = parse.parse_assertion("urn:li:assertion:a", info, runs([event(1, "SUCCESS"), event(3, "FAILURE", unexpectedCount=7), event(2, "SUCCESS")]))
    assert (a.result, a.failed_rows, a.column, a.ran_at_ms) == ("FAILURE", 7, "price", 3)
    assert parse.parse_assertion("urn:li:assertion:a", None, []).result is None


def test_feature_source_column_from_a_custom_property():
    props = dh.MLFeaturePropertiesClass(customProperties={"source_column": "amount"}, sources=["urn:li:dataset:t"])
    f = parse.parse_feature("urn:li:mlFeature:(fraud,txn_amount)", aspects(props), (), ["source_column"])
    assert (f.name, f.column, f.sources) == ("txn_amount", "amount", ("urn:li:dataset:t",))
    assert parse.parse_feature("urn:li:mlFeature:(fraud,x)", aspects(props)).column is None


def _run(
    value: float | None = None, unexpected: int | None = None, native: dict | None = None
) -> dh.AssertionRunEventClass:
    return dh.AssertionRunEventClass(
        timestampMillis=1, assertionUrn="urn:li:assertion:a", asserteeUrn="urn:li:dataset:x", runId="r",
        status="COMPLETE",
        result=dh.AssertionResultClass(type="FAILURE", actualAggValue=value, unexpectedCount=unexpected,
                                    nativeResults=native),
    )


def test_failed_rows_come_only_from_results_that_count_rows() -> None:
    dataset = "urn:li:dataset:(urn:li:dataPlatform:postgres,db.t,PROD)"
    not_null = dh.AssertionInfoClass(type="DATASET", datasetAssertion=dh.DatasetAssertionInfoClass(
        dataset=dataset, scope="DATASET_COLUMN", operator="NOT_NULL", aggregation="IDENTITY"))
    volume = dh.AssertionInfoClass(type="VOLUME", volumeAssertion=dh.VolumeAssertionInfoClass(
        type="ROW_COUNT_TOTAL", entity=dataset))
    mean = dh.AssertionInfoClass(type="DATASET", datasetAssertion=dh.DatasetAssertionInfoClass(
        dataset=dataset, scope="DATASET_COLUMN", operator="BETWEEN", aggregation="MEAN"))
    cases = [
        (not_null, _run(value=7), 7, None),
        (volume, _run(value=120_000), None, ("row_count", 120_000.0)),
        (mean, _run(value=17.5), None, ("mean", 17.5)),
        (None, _run(value=3), None, ("value", 3.0)),
        (mean, _run(value=17.5, unexpected=4), 4, ("mean", 17.5)),
        (None, _run(native={"failures": "12", "message": "Got 12 results"}), 12, None),
    ]
    for info, run, rows, metric in cases:
        parsed = parse.parse_assertion("urn:li:assertion:a", info, runs([run]))
        assert (parsed.failed_rows, parsed.metric) == (rows, metric), info


def test_a_secondary_sibling_stands_for_its_primary_as_a_copy_does() -> None:
    """On a GMS, DataHub joins a dbt node and its warehouse table with ``siblings``: one table to Recall."""
    dbt = "urn:li:dataset:(urn:li:dataPlatform:dbt,shop.staging.stg_payments,PROD)"
    warehouse = "urn:li:dataset:(urn:li:dataPlatform:postgres,shop.staging.stg_payments,PROD)"

    def parsed(urn: str, sibling: str, primary: bool):
        siblings = dh.SiblingsClass(siblings=[sibling], primary=primary)
        return parse.parse_dataset(urn, {siblings.ASPECT_NAME: siblings}, people={}, glossary={},
                                   freshness_property=None)

    assert parsed(dbt, warehouse, primary=False).copy_of == warehouse
    assert parsed(warehouse, dbt, primary=True).copy_of is None


def test_a_table_only_tested_or_built_exists_though_nothing_describes_it() -> None:
    """dbt hangs a source's freshness test on the warehouse table it never describes: the table and its test
    are there, so the test reaches the models reading it."""
    urn = "urn:li:dataset:(urn:li:dataPlatform:postgres,warehouse.raw.customers,PROD)"
    test = Assertion("urn:li:assertion:fresh", "source.shop.raw.customers", None, "FAILURE")
    tested = parse.parse_dataset(urn, {}, people={}, glossary={}, freshness_property=None, assertions=(test,))
    built = parse.parse_dataset(urn, {}, people={}, glossary={}, freshness_property=None, builds_ms=(5,))
    assert not tested.missing and tested.assertions == (test,)
    assert not built.missing and built.builds_ms == (5,)
    assert parse.parse_dataset(urn, {}, people={}, glossary={}, freshness_property=None).missing


def test_a_writer_is_named_as_the_orchestrator_shows_it() -> None:
    """DataHub's Dagster plugin names a data job ``<module>/<op>`` in a flow ``<module>/<job>``; people know
    the job and the op."""
    job = "urn:li:dataJob:(urn:li:dataFlow:(dagster,seed.dagster.definitions/dbt_build,PROD),seed.dagster.definitions/dbt_warehouse)"
    flow = parse.flow_of(job)
    assert flow == "urn:li:dataFlow:(dagster,seed.dagster.definitions/dbt_build,PROD)"
    described = parse.writer_name(job, {"dataJobInfo": dh.DataJobInfoClass(name="dbt_warehouse", type="COMMAND")},
                                  {"dataFlowInfo": dh.DataFlowInfoClass(name="dbt_build")})
    assert described == "dagster: dbt_build/dbt_warehouse"
    assert parse.writer_name(job, {}, {}) == (
        "dagster: seed.dagster.definitions/dbt_build/seed.dagster.definitions/dbt_warehouse"
    )
    urn = "urn:li:dataset:(urn:li:dataPlatform:postgres,warehouse.raw.customers,PROD)"
    written = parse.parse_dataset(urn, {}, people={}, glossary={}, freshness_property=None, written_by=(described,))
    assert not written.missing and written.written_by == (described,)
