"""Scans of estates ingested with DataHub's own tooling from hand-written MCP files."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console

from recall_dagster.detect import DETECTORS, ScanConfig, Severity
from recall_dagster.errors import ConfigError
from recall_dagster.estate.resolve import resolve_closures
from recall_dagster.estate.coverage import DATASET_SIGNALS
from recall_dagster.graph import LiteGraph
from recall_dagster.report import render_report
from recall_dagster.kept.baselines import MemoryStateStore
from recall_dagster.results import ScanResult
from recall_dagster.scan import run_scan
from scan_estates import SCAN_AT_MS, ingest

SF = "urn:li:dataPlatform:snowflake"
RAW_PAY = f"urn:li:dataset:({SF},shop.raw.payments,PROD)"
RAW_CUST = f"urn:li:dataset:({SF},shop.raw.customers,PROD)"
STG_PAY = f"urn:li:dataset:({SF},shop.staging.payments_clean,PROD)"
STG_DEDUP = f"urn:li:dataset:({SF},shop.staging.payments_dedup,PROD)"
MART = f"urn:li:dataset:({SF},shop.marts.customer_spend,PROD)"
OLD = f"urn:li:dataset:({SF},shop.marts.old_features,PROD)"
LABELS = f"urn:li:dataset:({SF},shop.labels.chargebacks,PROD)"
LEGACY = f"urn:li:dataset:({SF},shop.legacy.risk_flags,PROD)"
GHOST = "urn:li:dataset:(urn:li:dataPlatform:kafka,shop.ghost_feed,PROD)"
F_RISK = "urn:li:mlFeature:(spend,risk_flag)"
M1 = "urn:li:mlModel:(urn:li:dataPlatform:sagemaker,spend_model_1,PROD)"
M2 = "urn:li:mlModel:(urn:li:dataPlatform:sagemaker,spend_model_2,PROD)"
CHURN = "urn:li:mlModel:(urn:li:dataPlatform:sagemaker,churn_model,PROD)"
DEP_BLUE = "urn:li:mlModelDeployment:(urn:li:dataPlatform:sagemaker,spend-endpoint-blue,PROD)"
ASSERTION = "urn:li:assertion:0f3c9a1e2b"


def scan(db: Path, config: ScanConfig, store: MemoryStateStore | None = None, **kwargs) -> ScanResult:
    graph = LiteGraph(db, read_only=True)
    try:
        return run_scan(graph, config, store or MemoryStateStore(), scanned_at_ms=SCAN_AT_MS, **kwargs)
    finally:
        graph.close()


def findings_of(result: ScanResult, model: str) -> set[tuple[str, str, str]]:
    report = next(m for m in result.models if m.closure.urn == model)
    return {(f.detector, f.severity.value, f.subject) for f in report.findings}


def test_every_detector_reports_what_it_owns_on_a_foreign_estate(estate, config):
    result = scan(estate("general"), config)

    assert [m.closure.urn for m in result.models] == [M1, M2]  # churn_model is not in production
    assert findings_of(result, M1) == {
        ("orphaned_feature", "CRITICAL", F_RISK),
        ("training_serving_skew", "CRITICAL", MART),
        ("training_serving_skew", "CRITICAL", LEGACY),
        ("training_serving_skew", "WARN", OLD),
        ("failing_assertion", "CRITICAL", ASSERTION),
        ("upstream_staleness", "WARN", MART),
        ("ownership_vacuum", "WARN", M1),
        ("ownership_vacuum", "WARN", MART),
        ("undocumented_critical_path", "WARN", MART),
        ("pii_exposure", "WARN", RAW_CUST),
        ("deprecated_upstream", "WARN", OLD),
        ("version_mismatch", "WARN", DEP_BLUE),
        ("blast_radius", "INFO", LEGACY),
        ("blast_radius", "INFO", MART),
        ("blast_radius", "INFO", OLD),
        ("blast_radius", "INFO", STG_PAY),
    }
    # spend_model_2 is the production version, documents its PII use and trains on what it serves
    assert findings_of(result, M2) == {
        ("failing_assertion", "CRITICAL", ASSERTION),
        ("upstream_staleness", "WARN", MART),
        ("ownership_vacuum", "WARN", MART),
        ("undocumented_critical_path", "WARN", MART),
        ("blast_radius", "INFO", MART),
        ("blast_radius", "INFO", STG_PAY),
    }
    assert {m.closure.urn: (m.score.value, m.score.tier) for m in result.models} == {
        M1: (100, "CRITICAL"),
        M2: (71, "CRITICAL"),  # (30 + 3 * 10 + 2 * 1) * 1.15
    }


def test_findings_carry_actionable_evidence(estate, config):
    result = scan(estate("general"), config)
    by_key = {(f.detector, f.subject): f for f in result.models[0].findings}

    failing = by_key[("failing_assertion", ASSERTION)]
    assert failing.cause == STG_PAY
    assert failing.evidence["column"] == "amount"
    assert failing.evidence["failed_rows"] == 42  # the latest run, not the older success
    assert failing.evidence["assertion"] == "not_null_payments_clean_amount"
    assert failing.evidence["path"] == [M1, "urn:li:mlFeature:(spend,spend_30d)", MART, STG_PAY, ASSERTION]

    deprecated = by_key[("deprecated_upstream", OLD)]
    assert deprecated.evidence["replacement"] == MART
    assert "replaced by shop.marts.customer_spend" in deprecated.message

    stale = by_key[("upstream_staleness", MART)]
    assert stale.evidence["freshness_source"] == "operation"
    assert stale.evidence["age_hours"] == 720.0  # the newer of two operations counts

    pii = by_key[("pii_exposure", RAW_CUST)]
    assert pii.evidence["columns"] == ["email", "phone"]  # glossary term on one, editable tag on the other


def test_closures_read_legacy_inputs_cycles_and_dangling_urns(estate, config):
    graph = LiteGraph(estate("general"), read_only=True)
    try:
        closures = {c.urn: c for c in resolve_closures(graph, config.resolve, )}
    finally:
        graph.close()
    m1 = closures[M1]

    assert m1.training_inputs == (OLD, LABELS)  # dataProcessInstanceInput.inputs (legacy field)
    assert closures[M2].training_inputs == (MART, LABELS)  # inputEdges
    assert set(m1.datasets) == {MART, LEGACY, OLD, LABELS, STG_PAY, RAW_CUST, RAW_PAY, STG_DEDUP, GHOST}
    assert m1.dataset(LEGACY).missing and m1.dataset(GHOST).missing  # dangling, kept and marked
    assert STG_PAY in m1.dataset(STG_DEDUP).upstreams and STG_DEDUP in m1.dataset(STG_PAY).upstreams  # a cycle
    assert [t.urn for t in m1.feature_tables] == ["urn:li:mlFeatureTable:(urn:li:dataPlatform:feast,spend_features)"]
    assert m1.production_versions == (M2,)
    assert [(d.urn, d.live) for d in m1.deployments] == [(DEP_BLUE, True)]
    assert m1.dataset(OLD).freshness_at(SCAN_AT_MS).source == "property:last_refreshed_at"


def test_depth_limit_bounds_the_closure(estate, config):
    shallow = replace(config, resolve=replace(config.resolve, max_depth=1))
    graph = LiteGraph(estate("general"), read_only=True)
    try:
        (m2,) = resolve_closures(graph, shallow.resolve, model_urns=[M2])
    finally:
        graph.close()
    assert set(m2.datasets) == {MART, LABELS, STG_PAY, RAW_CUST}


def test_schema_drift_is_reported_against_the_first_scan(estate, config):
    db = estate("general")
    store = MemoryStateStore()
    first = scan(db, config, store)
    assert not any(f.detector == "training_source_schema_drift" for m in first.models for f in m.findings)
    assert RAW_PAY in store.baselines and store.baselines[RAW_PAY]["amount"] == "NUMBER(38,2)"

    ingest(db, "estate_general_drift.json")
    second = scan(db, config, store)
    drift = {
        f.subject: f for f in second.models[0].findings if f.detector == "training_source_schema_drift"
    }
    # amount reaches feature spend_30d through column lineage raw -> staging -> mart
    assert drift[RAW_PAY].severity is Severity.CRITICAL
    assert drift[RAW_PAY].evidence["changes"] == [
        {"column": "amount", "change": "retyped", "before": "NUMBER(38,2)", "after": "VARCHAR"}
    ]
    assert set(drift) == {RAW_PAY, RAW_CUST}, "the retype is one finding, where it starts, not one per copy"
    assert drift[RAW_PAY].evidence["reached"] == ["shop.staging.payments_clean.amount"], "where the retype went"
    assert drift[RAW_PAY].message.endswith("; reached shop.staging.payments_clean.amount")
    # a new column that feeds nothing the model reads
    assert drift[RAW_CUST].severity is Severity.WARN
    assert drift[RAW_CUST].evidence["changes"][0]["change"] == "added"

    # baselines are kept until accepted, so the drift is still reported next time
    third = scan(db, config, store)
    assert any(f.detector == "training_source_schema_drift" for f in third.models[0].findings)
    scan(db, config, store, accept_schema=["raw.payments"])
    one = scan(db, config, store)
    assert {f.subject for m in one.models for f in m.findings if f.detector == "training_source_schema_drift"} == {
        RAW_CUST, STG_PAY}, "only the table accepted stops drifting: its staging copy now speaks for itself"
    with pytest.raises(ConfigError, match=r"--accept-schema raw\.nowhere names no table"):
        scan(db, config, store, accept_schema=["raw.nowhere"])
    scan(db, config, store, accept_schema=["*"])
    accepted = scan(db, config, store)
    assert not any(f.detector == "training_source_schema_drift" for m in accepted.models for f in m.findings)


def test_blast_radius_is_ranked_by_live_deployments(estate, config):
    result = scan(estate("general"), config)
    assert [b.contract().as_json() for b in result.blast_radius] == [
        {"dataset": MART, "models": [M1, M2], "deployments": 2, "flagged_by": ["upstream_staleness"]},
        {"dataset": STG_PAY, "models": [M1, M2], "deployments": 2, "flagged_by": ["failing_assertion"]},
        {"dataset": LEGACY, "models": [M1], "deployments": 1, "flagged_by": ["orphaned_feature"]},
        {"dataset": OLD, "models": [M1], "deployments": 1, "flagged_by": ["deprecated_upstream"]},
    ]


def test_scan_all_includes_models_outside_production(estate, config):
    result = scan(estate("general"), config, include_all=True)
    churn = next(m for m in result.models if m.closure.urn == CHURN)
    assert churn.closure.production is False
    assert {(f.detector, f.severity.value) for f in churn.findings} == {
        ("ownership_vacuum", "WARN"),
        ("training_serving_skew", "INFO"),  # no recorded run
        ("upstream_staleness", "WARN"),
        ("failing_assertion", "CRITICAL"),
        ("pii_exposure", "WARN"),
        ("blast_radius", "INFO"),
    }  # no undocumented_critical_path: that rule guards production models only


def test_json_contract_is_stable_and_deterministic(estate, config):
    db = estate("general")
    first, second = scan(db, config).contract().as_json(), scan(db, config).contract().as_json()
    assert json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True)
    assert first["scanned_at"] == "2025-06-01T00:00:00+00:00"
    assert first["graph"] == str(db)
    model = first["models"][0]
    assert {"urn", "name", "production", "score", "tier", "deployments", "findings"} <= set(model)
    assert model["deployments"] == 1 and model["production"] is True
    assert {"detector", "severity", "subject", "message", "evidence"} <= set(model["findings"][0])
    assert [f["severity"] for f in model["findings"]] == sorted(
        (f["severity"] for f in model["findings"]), key=["CRITICAL", "WARN", "INFO"].index
    )
    assert set(first["blast_radius"][0]) >= {"dataset", "models", "deployments"}
    json.dumps(first)  # every evidence value is JSON


def test_healthy_estate_has_no_findings_at_all(estate, config):
    db = estate("healthy")
    store = MemoryStateStore()
    for _ in range(2):  # the second scan compares schemas against the first
        result = scan(db, config, store)
        assert [(m.closure.model.name, m.score.tier) for m in result.models] == [("engagement_3", "HEALTHY")]
        assert result.models[0].findings == ()
        assert result.blast_radius == () and result.failing == ()
    assert {d.name for d in DETECTORS} <= set(config.detectors)  # every detector ran


def test_a_unit_change_only_a_profile_shows_is_reported_by_profile_drift_alone(estate, config):
    db = estate("healthy")
    store = MemoryStateStore()
    scan(db, config, store)
    ingest(db, "estate_healthy_profile_shift.json")  # the export now counts sessions in thousandths
    result = scan(db, config, store)
    [found] = result.models[0].findings
    assert (found.detector, found.severity.value) == ("profile_drift", "WARN"), "no schema detector sees it"
    assert found.subject == "urn:li:dataset:(urn:li:dataPlatform:bigquery,proj.features.user_stats,PROD)"
    assert "sessions_7d: mean 4.2 -> 4,300" in found.message and found.evidence["features"] == ["sessions_7d"]
    assert found.evidence["reference"] == "the profile when this version trained"
    assert result.models[0].score.tier != "HEALTHY"


def test_sparse_estate_reports_only_the_dangling_feature(estate, config):
    result = scan(estate("sparse"), config)
    assert {m.closure.model.name for m in result.models} == {"rules_engine", "hinter"}
    assert [
        (m.closure.model.name, f.detector, f.severity.value) for m in result.models for f in m.findings
    ] == [
        ("hinter", "orphaned_feature", "CRITICAL"),  # it consumes never_registered, which nobody catalogued
        ("hinter", "training_serving_skew", "INFO"),  # its run was never recorded
    ]
    hinter = next(m for m in result.models if m.closure.model.name == "hinter")
    assert [f.missing for f in hinter.closure.features] == [False, True]  # never_registered dangles
    assert hinter.closure.training_runs[0].missing
    render_report(result, Console(file=io.StringIO(), width=120))


def test_empty_graph_scans_clean(tmp_path, config):
    graph = LiteGraph(tmp_path / "empty.db")
    try:
        result = run_scan(graph, config, MemoryStateStore(), scanned_at_ms=SCAN_AT_MS, include_all=True)
    finally:
        graph.close()
    assert result.models == () and result.blast_radius == () and result.failing == ()
    assert result.contract().as_json()["models"] == []
    assert result.contract().as_json()["coverage"]["datasets"] == {"total": 0, **dict.fromkeys(DATASET_SIGNALS, 0)}


def test_report_renders_every_section(estate, config):
    result = scan(estate("general"), config)
    console = Console(record=True, width=200, file=io.StringIO())
    render_report(result, console)
    text = console.export_text()
    for expected in ("spend_model_1", "CRITICAL (", "WARN (", "INFO (", "Blast radius", "fail tier CRITICAL"):
        assert expected in text


def test_the_report_reads_in_an_80_column_terminal(estate, config):
    """No header is cut ("sco…"), no name is cut short and no row runs past the edge: long names fold."""
    result = scan(estate("general"), config)
    long_name = "customer_lifetime_value_propensity_to_churn_gradient_boosted_v2"
    first = result.models[0]
    named = replace(first, closure=replace(first.closure, model=replace(first.closure.model, name=long_name)))
    console = Console(record=True, width=80, file=io.StringIO())
    render_report(replace(result, models=(named,)), console)
    lines = console.export_text().splitlines()
    header = next(line for line in lines if line.split()[:1] == ["model"])
    assert [w for w in header.split() if w != "┃"] == ["model", "prod", "tier", "score", "live", "crit/warn/info"]
    assert max(map(len, lines)) <= 80
    assert any("customer_lifetime_value" in line for line in lines), "the name folds, it is not dropped"
    assert not any("…" in line for line in lines), "nothing is cut short"
    usual = replace(first, closure=replace(first.closure, model=replace(first.closure.model, name="churn_predictor_12")))
    assert any("│" in line and "churn_predictor_12" in line and first.score.tier in line
               for line in _rendered(replace(result, models=(usual,)), 80)), (
        "a usual name keeps its row's one line at 80 columns: the score bar gives way")
    assert any("█" in line for line in _rendered(result, 120)), "a wide terminal draws the score bar"


def _rendered(result, width: int) -> list[str]:  # noqa: ANN001 - a ScanResult
    console = Console(record=True, width=width, file=io.StringIO())
    render_report(result, console)
    return console.export_text().splitlines()
