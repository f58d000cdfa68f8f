"""Detector rules on hand-built closures: the edge cases no single estate shows."""

from __future__ import annotations

from dataclasses import replace

from scan_closures import HOUR, NOW, closure, cols, ds, feature, run, urn

from recall_dagster.detect import DetectorState, Severity
from recall_dagster.scan import judged
from recall_dagster.detect import (
    deprecated_upstream,
    failing_assertion,
    orphaned_feature,
    ownership_vacuum,
    pii_exposure,
    training_serving_skew,
    training_source_schema_drift,
    undocumented_critical_path,
    upstream_staleness,
    version_mismatch,
)
from recall_dagster.estate import Assertion, ColumnEdge, Dataset, Owner, SchemaField, Term
from recall_dagster.estate.coverage import coverage
from recall_dagster.estate.unserved import Unserved
from tests.configured import configured

STATE = DetectorState(at_ms=NOW)


def subjects(findings) -> list[tuple[str, str]]:
    return [(f.subject, f.severity.value) for f in findings]


def tuned(**overrides):
    """The shipped config with some keys replaced, as a user's overlay file would."""
    return configured(overrides, "test overlay").scan


# -- upstream_staleness --------------------------------------------------------


def test_staleness_uses_windows_and_ignores_unknown_freshness(config):
    c = closure(
        features=[feature("f", "mart")],
        datasets=[
            ds("mart", "raw", "unknown", operations_ms=((NOW - 30 * HOUR, NOW - 30 * HOUR),)),
            ds("raw", last_modified_ms=NOW - 200 * HOUR),
            ds("unknown"),
        ],
    )
    assert subjects(upstream_staleness.detect(c, config, STATE)) == [(urn("raw"), "WARN")]
    strict = tuned(freshness={"windows": {"*.mart": 24}})
    assert subjects(upstream_staleness.detect(c, strict, STATE)) == [(urn("mart"), "WARN"), (urn("raw"), "WARN")]


def test_staleness_as_of_ignores_later_updates(config):
    mart = ds("mart", operations_ms=((NOW, NOW), (NOW - 10 * 24 * HOUR, NOW - 10 * 24 * HOUR)))
    now = closure(features=[feature("f", "mart")], datasets=[mart])
    assert upstream_staleness.detect(now, config, STATE) == []
    (stale,) = upstream_staleness.detect(now, config, DetectorState(at_ms=NOW - HOUR))
    assert stale.evidence["last_updated_ms"] == NOW - 10 * 24 * HOUR


def test_staleness_trusts_the_newest_report_over_rosier_older_ones(config):
    """A feed whose latest load report says its data is 40 days old is stale, whatever came before."""
    raw = ds("raw", operations_ms=((NOW - HOUR, NOW - 40 * 24 * HOUR), (NOW - 2 * HOUR, NOW - 3 * HOUR)))
    c = closure(features=[feature("f", "raw")], datasets=[raw])
    (stale,) = upstream_staleness.detect(c, config, STATE)
    assert stale.evidence["last_updated_ms"] == NOW - 40 * 24 * HOUR


def test_a_stale_table_names_the_orchestrator_jobs_that_write_it(config):
    """DataHub's Dagster plugin records which op writes a table: the finding says what to rerun."""
    raw = ds("raw", last_modified_ms=NOW - 200 * HOUR, written_by=("dagster: dbt_build/dbt_warehouse",))
    (stale,) = upstream_staleness.detect(closure(features=[feature("f", "raw")], datasets=[raw]), config, STATE)
    assert stale.message.endswith("(per its lastModified); written by dagster: dbt_build/dbt_warehouse")
    assert stale.evidence["written_by"] == ["dagster: dbt_build/dbt_warehouse"]
    unrecorded = closure(features=[feature("f", "raw")], datasets=[replace(raw, written_by=())])
    assert "written_by" not in upstream_staleness.detect(unrecorded, config, STATE)[0].evidence


# -- training_serving_skew -----------------------------------------------------


def test_skew_accepts_training_on_derived_or_input_tables(config):
    datasets = [ds("src", "raw"), ds("raw"), ds("train_set", "src", "labels_y"), ds("labels_y")]
    derived = closure(features=[feature("f", "src")], runs=[run("r", "train_set")], datasets=datasets)
    assert training_serving_skew.detect(derived, config, STATE) == []
    from_inputs = closure(features=[feature("f", "src")], runs=[run("r", "raw", "labels_y")], datasets=datasets)
    assert training_serving_skew.detect(from_inputs, config, STATE) == []


def test_skew_flags_both_directions_and_skips_labels(config):
    c = closure(
        features=[feature("f", "v2")],
        runs=[run("r", "v1", "fraud_labels")],
        datasets=[ds("v2", "events"), ds("v1", "events"), ds("events"), ds("fraud_labels")],
    )
    assert subjects(training_serving_skew.detect(c, config, STATE)) == [(urn("v2"), "CRITICAL"), (urn("v1"), "WARN")]


def test_skew_is_silent_without_features_or_runs_and_informs_without_a_run(config):
    assert training_serving_skew.detect(closure(), config, STATE) == []
    (info,) = training_serving_skew.detect(closure(features=[feature("f", "src")], datasets=[ds("src")]), config, STATE)
    assert info.severity is Severity.INFO


# -- training_source_schema_drift ----------------------------------------------


def _drift(c, baselines, config):
    return training_source_schema_drift.detect(c, config, DetectorState(at_ms=NOW, schema_baselines=baselines))


def test_drift_needs_a_baseline(config):
    c = closure(features=[feature("spend", "mart")], datasets=[ds("mart", fields=cols(spend="int"))])
    assert _drift(c, {}, config) == []
    assert _drift(c, {urn("mart"): {"spend": "int"}}, config) == []


def test_drift_severity_follows_the_feature_column(config):
    mart = ds("mart", fields=cols(id="int", spend="text", note="text"))
    c = closure(features=[feature("spend", "mart")], datasets=[mart])
    (retyped,) = _drift(c, {urn("mart"): {"id": "int", "spend": "int", "note": "text"}}, config)
    assert retyped.severity is Severity.CRITICAL
    (other,) = _drift(c, {urn("mart"): {"id": "bigint", "spend": "text", "note": "text"}}, config)
    assert other.severity is Severity.WARN  # id feeds no feature
    lost = closure(features=[feature("spend", "mart")], datasets=[ds("mart", fields=cols(id="int"))])
    (gone,) = _drift(lost, {urn("mart"): {"id": "int", "spend": "int"}}, config)
    assert gone.severity is Severity.CRITICAL and gone.evidence["changes"][0]["change"] == "removed"


def test_drift_whole_source_counts_when_no_column_carries_the_feature_name(config):
    c = closure(features=[feature("score", "mart")], datasets=[ds("mart", fields=cols(a="int", b="text"))])
    (f,) = _drift(c, {urn("mart"): {"a": "int", "b": "int"}}, config)
    assert f.severity is Severity.CRITICAL


def test_drift_any_column_of_a_direct_training_input_is_critical(config):
    c = closure(runs=[run("r", "train_set")], datasets=[ds("train_set", fields=cols(x="int", extra="int"))])
    (f,) = _drift(c, {urn("train_set"): {"x": "int"}}, config)
    assert f.severity is Severity.CRITICAL and f.evidence["changes"][0]["change"] == "added"


# -- the others ----------------------------------------------------------------


def test_orphaned_feature_conditions(config):
    c = closure(
        features=[feature("a", "gone"), feature("b", "retired"), feature("c", "old"), feature("d", "ok")],
        datasets=[ds("retired", removed=True), ds("old", deprecated=True, replacement=urn("ok")), ds("ok")],
    )
    found = orphaned_feature.detect(c, config, STATE)
    assert [(f.evidence["condition"], f.severity.value, f.cause) for f in found] == [
        ("missing", "CRITICAL", urn("gone")),
        ("removed", "CRITICAL", urn("retired")),
        ("deprecated", "WARN", urn("old")),
    ]
    assert "move it to db.ok" in found[2].message


def test_a_feature_served_from_an_export_is_orphaned_by_the_retired_table_its_column_is_read_from(config):
    """A feature store export joins two feeds; retiring one orphans the features it fills, not their neighbours."""
    export_edges = (
        ColumnEdge((urn("feed_v1"), "risk"), (urn("export"), "risk")),
        ColumnEdge((urn("feed_v2"), "trust"), (urn("export"), "trust")),
    )
    c = closure(
        features=[feature("risk", "export"), feature("trust", "export")],
        datasets=[
            ds("export", "feed_v1", "feed_v2", column_lineage=export_edges),
            ds("feed_v1", deprecated=True, replacement=urn("feed_v2")),
            ds("feed_v2"),
        ],
    )
    [found] = orphaned_feature.detect(c, config, STATE)
    assert (found.subject, found.cause, found.evidence["column"]) == ("urn:li:mlFeature:(ns,risk)", urn("feed_v1"), "risk")
    assert list(found.evidence["path"][-2:]) == [urn("export"), urn("feed_v1")]
    assert "read from db.feed_v1.risk, which is deprecated; move it to db.feed_v2" in found.message
    healed = closure(
        features=[feature("risk", "export"), feature("trust", "export")],
        datasets=[ds("export", "feed_v1", "feed_v2", column_lineage=export_edges), ds("feed_v1"), ds("feed_v2")],
    )
    assert orphaned_feature.detect(healed, config, STATE) == []


def test_ownership_counts_departed_owners_as_none(config):
    gone = (Owner("urn:li:corpuser:bob", active=False),)
    c = closure(
        features=[feature("f", "src")],
        runs=[run("r", "train")],
        datasets=[ds("src", owners=gone), ds("train", "upstream_unowned"), ds("upstream_unowned", owners=())],
        owners=(),
    )
    found = ownership_vacuum.detect(c, config, STATE)
    assert subjects(found) == [(c.model.urn, "WARN"), (urn("src"), "WARN")]  # upstream tables are not paged
    assert "bob left" in found[1].message


def test_undocumented_critical_path_needs_fan_in_and_no_docs(config):
    c = closure(
        features=[feature("f", "mart")],
        datasets=[
            ds("mart", "a", "b", description=None),
            ds("glossed", "a", "b", description=None, terms=(Term("urn:li:glossaryTerm:Spend", "Spend"),)),
            ds("a", description=None),
            ds("b"),
        ],
    )
    assert subjects(undocumented_critical_path.detect(c, config, STATE)) == [(urn("mart"), "WARN")]
    assert undocumented_critical_path.detect(replace(c, production=False), config, STATE) == []


def test_pii_needs_a_justification_tag_or_property(config):
    users = ds("users", fields=(SchemaField("email", "text", tags=("PII",)), SchemaField("id", "int")))
    plain = closure(features=[feature("f", "users")], datasets=[users])
    (f,) = pii_exposure.detect(plain, config, STATE)
    assert f.evidence["columns"] == ["email"]
    by_prop = closure(features=[feature("f", "users")], datasets=[users], properties={"pii_justification": "DPIA-7"})
    assert pii_exposure.detect(by_prop, config, STATE) == []
    by_tag = closure(features=[feature("f", "users")], datasets=[users], tags=("pii-justified",))
    assert pii_exposure.detect(by_tag, config, STATE) == []


def test_failing_assertion_maps_result_to_severity(config):
    assertions = (
        Assertion("urn:li:assertion:a", "unique_id", column="id", result="ERROR"),
        Assertion("urn:li:assertion:b", "not_null", result="SUCCESS"),
        Assertion("urn:li:assertion:c", "never_ran"),
    )
    c = closure(features=[feature("id", "t")], datasets=[ds("t", assertions=assertions)])
    (f,) = failing_assertion.detect(c, config, STATE)
    assert (f.subject, f.severity.value, f.cause) == ("urn:li:assertion:a", "WARN", urn("t"))
    assert "db.t.id errored" in f.message


def test_a_failing_column_that_reaches_none_of_the_models_inputs_is_not_its_finding(config):
    """A NULL in a column staging drops: its recorded lineage leads to none of the model's inputs, so it
    reaches the model by no command's rule (the scan counted every failing test on an upstream table)."""
    dropped = Assertion("urn:li:assertion:note", "not_null_note", column="note", result="FAILURE")
    raw = ds("raw", fields=cols(id="int", note="text"), assertions=(dropped,))
    stg = ds("stg", "raw", fields=cols(id="int"), column_lineage=(ColumnEdge((urn("raw"), "id"), (urn("stg"), "id")),))
    c = closure(features=[feature("id", "stg")], datasets=[raw, stg])
    assert failing_assertion.detect(c, config, STATE) == []
    on_id = replace(dropped, column="id")
    reached = closure(features=[feature("id", "stg")], datasets=[replace(raw, assertions=(on_id,)), stg])
    assert [f.evidence["column"] for f in failing_assertion.detect(reached, config, STATE)] == ["id"]


def test_deprecated_upstream_reports_removed_and_deprecated_anywhere(config):
    c = closure(
        features=[feature("f", "mart")],
        datasets=[ds("mart", "mid"), ds("mid", "deep"), ds("deep", removed=True)],
    )
    assert subjects(deprecated_upstream.detect(c, config, STATE)) == [(urn("deep"), "WARN")]


def test_version_mismatch_only_for_live_deployments_of_other_versions(config):
    other = "urn:li:mlModel:(urn:li:dataPlatform:mlflow,m_2,PROD)"
    stale = closure(production_versions=(other,))
    (f,) = version_mismatch.detect(stale, config, STATE)
    assert f.subject == stale.deployments[0].urn and f.evidence["production_versions"] == [other]
    current = closure(production_versions=("urn:li:mlModel:(urn:li:dataPlatform:mlflow,m_1,PROD)",))
    assert version_mismatch.detect(current, config, STATE) == []
    assert version_mismatch.detect(closure(), config, STATE) == []  # the registry names no production version


def test_retuning_is_a_config_change(config):
    c = closure(features=[feature("f", "users")], datasets=[ds("users", tags=("sensitive",))])
    assert pii_exposure.detect(c, config, STATE)[0].severity is Severity.WARN
    strict = tuned(detectors={"pii_exposure": {"severity": {"unjustified": "CRITICAL"}}})
    assert pii_exposure.detect(c, strict, STATE)[0].severity is Severity.CRITICAL
    off = tuned(detectors={"pii_exposure": {"enabled": False}})
    assert all(f.detector != "pii_exposure" for fs in judged([c], off, {}, at_ms=NOW).findings.values() for f in fs)


def test_depth_limit_and_cycles_in_assembly(config):
    datasets = [ds("a", "b"), ds("b", "c"), ds("c", "a")]
    full = closure(features=[feature("f", "a")], datasets=datasets)
    assert set(full.datasets) == {urn("a"), urn("b"), urn("c")}
    assert full.path_to(urn("c"))[-3:] == (urn("a"), urn("b"), urn("c"))
    shallow = closure(features=[feature("f", "a")], datasets=datasets, max_depth=1)
    assert set(shallow.datasets) == {urn("a"), urn("b")}


def test_findings_are_sorted_and_deterministic(config):
    c = closure(
        features=[feature("f", "gone"), feature("g", "old")],
        datasets=[ds("old", deprecated=True, owners=())],
        owners=(),
    )
    first = judged([c], config, {}, at_ms=NOW).findings[c.urn]
    second = judged([c], config, {}, at_ms=NOW).findings[c.urn]
    assert first == second
    assert [f.severity.rank for f in first] == sorted(f.severity.rank for f in first)


def test_drift_follows_a_recorded_feature_column(config):
    txn = replace(feature("txn_amount", "tx"), column="amount")
    c = closure(features=[txn], datasets=[ds("tx", fields=cols(amount="text", hour="text"))])
    (on_feature,) = _drift(c, {urn("tx"): {"amount": "int", "hour": "text"}}, config)
    assert on_feature.severity is Severity.CRITICAL
    (elsewhere,) = _drift(c, {urn("tx"): {"amount": "text", "hour": "int"}}, config)
    assert elsewhere.severity is Severity.WARN


def test_a_serving_table_joining_the_trained_table_with_a_new_input_is_skew(config):
    datasets = [ds("trained", "events"), ds("events"), ds("serving", "trained", "bureau"), ds("bureau")]
    joined = closure(features=[feature("f", "serving")], runs=[run("r", "trained")], datasets=datasets)
    (skew,) = training_serving_skew.detect(joined, config, STATE)
    assert (skew.subject, skew.severity) == (urn("serving"), Severity.CRITICAL)
    assert skew.evidence["unseen_inputs"] == [urn("bureau")] and "joins what training read with db.bureau" in skew.message
    only_trained = [ds("trained", "events"), ds("events"), ds("serving", "trained")]
    derived = closure(features=[feature("f", "serving")], runs=[run("r", "trained")], datasets=only_trained)
    assert training_serving_skew.detect(derived, config, STATE) == [], "derived from the trained table alone"


def test_a_path_shows_each_table_once_whichever_twin_was_walked(config):
    """A dbt node reads its parent's warehouse twin: the walk passes both names, the reader sees one table."""
    old = ((NOW - 40 * 24 * HOUR, NOW - 40 * 24 * HOUR),)
    datasets = [
        ds("mart_pg", "mart", copy_of=urn("mart")), ds("mart", "stg_pg"),
        ds("stg_pg", "stg", copy_of=urn("stg")), ds("stg", "raw"), ds("raw", operations_ms=old),
    ]
    c = closure(features=[feature("f", "mart_pg")], datasets=datasets)
    (stale,) = upstream_staleness.detect(c, config, STATE)
    tables = [step for step in stale.evidence["path"] if step.startswith("urn:li:dataset:")]
    assert tables == [urn("mart"), urn("stg"), urn("raw")]


# -- SageMaker's feature store, as DataHub's sagemaker source writes it ----------------------------------------
OFFLINE = "urn:li:dataset:(urn:li:dataPlatform:s3,ml-bucket/feature-store,PROD)"
GLUE = "urn:li:dataset:(urn:li:dataPlatform:glue,sagemaker_featurestore.customers_1700000000,PROD)"
CHANNEL = ("urn:li:dataset:(urn:li:dataPlatform:s3,ml-bucket/feature-store/123/sagemaker/us-east-1/offline-store/"
           "customers-1700000000/data,PROD)")


def _sagemaker(*, glue: bool, channel: str = CHANNEL, **glue_fields):
    """A feature group's features name its S3 offline store (nothing catalogued) and its Glue table; the
    training job read an S3 channel below the store."""
    features = [replace(feature(name, tabled=True), sources=(OFFLINE, GLUE)) for name in ("spend", "visits")]
    tables = [Dataset(urn=GLUE, name="sagemaker_featurestore.customers_1700000000", owners=(Owner("urn:li:corpuser:a"),),
                      description="the offline store's table", **glue_fields)] if glue else []
    runs = [replace(run("train"), inputs=(channel,))]
    return closure(features=features, runs=runs, datasets=tables)


def test_a_feature_store_s_uncatalogued_offline_path_orphans_nothing_and_is_a_coverage_gap(config):
    for glue in (True, False):
        c = _sagemaker(glue=glue)
        assert orphaned_feature.detect(c, config, STATE) == [], f"glue catalogued: {glue}"
        assert OFFLINE in c.uncatalogued_sources and (GLUE in c.uncatalogued_sources) is not glue
        gap = coverage([c], NOW).contract(Unserved(), []).uncatalogued_feature_sources
        assert gap == {"m_1": sorted(c.uncatalogued_sources)}
    retired = _sagemaker(glue=True, removed=True)
    assert [f.evidence["condition"] for f in orphaned_feature.detect(retired, config, STATE)] == ["removed"] * 2, (
        "a Glue table removed from the catalog still orphans the features read from it")


def test_a_training_job_reading_below_the_offline_store_is_not_skew_against_its_glue_table(config):
    assert training_serving_skew.detect(_sagemaker(glue=True), config, STATE) == []
    elsewhere = _sagemaker(glue=True, channel="urn:li:dataset:(urn:li:dataPlatform:s3,ml-bucket/exports/v1,PROD)")
    skew = training_serving_skew.detect(elsewhere, config, STATE)
    assert {(f.evidence["side"], f.subject) for f in skew} >= {("serving", GLUE), ("training", elsewhere.training_inputs[0])}, (
        "a job that read another bucket path is still skew")
