"""Which mutation replays which finding: pure, over hand-built findings and an empty column graph."""

from __future__ import annotations

from recall_dagster.detect import Finding, Severity
from recall_dagster.config.load import load
from recall_dagster.impact.measured import STALE_REASON, replays_for
from recall_dagster.estate.columns import ColumnGraph

TABLE = "urn:li:dataset:(urn:li:dataPlatform:postgres,warehouse.marts.fct_orders,PROD)"
COLUMNS = ColumnGraph(canonical={}, upstream={}, downstream={}, columns={})
MC = load().impact.measured
LC = load().lifecycle


def drift(*changes: dict) -> Finding:
    return Finding(
        "training_source_schema_drift", Severity.CRITICAL, TABLE, "changed", cause=TABLE,
        evidence={"changes": list(changes), "model_input_columns": [c["column"] for c in changes]},
    )


def failing(name: str, column: str | None, failed: int | None) -> Finding:
    return Finding(
        "failing_assertion", Severity.CRITICAL, "urn:li:assertion:x", "failed", cause=TABLE,
        evidence={"assertion": name, "dataset": TABLE, "column": column, "failed_rows": failed},
    )


def test_each_schema_change_is_replayed_by_its_mutation() -> None:
    replays, reason = replays_for(
        drift(
            {"column": "price", "change": "retyped", "before": "numeric", "after": "text"},
            {"column": "ordered_at", "change": "retyped", "before": "timestamp with time zone",
             "after": "timestamp without time zone"},
            {"column": "status", "change": "removed", "before": "text", "after": None},
            {"column": "note", "change": "added", "before": None, "after": "text"},
        ),
        COLUMNS, LC, MC, {},
    )
    assert reason is None
    assert [(r.changed[1], r.mutation.label) for r in replays] == [
        ("price", "type_coercion"), ("ordered_at", "timezone_shift:1"), ("status", "drop"),
    ], "an added column changes nothing the model reads"


def test_a_failing_not_null_test_is_replayed_at_the_share_of_rows_that_failed() -> None:
    [replay], reason = replays_for(failing("not_null_fct_orders_price", "price", 250), COLUMNS, LC, MC,
                                   {"marts.fct_orders": 1000})
    assert reason is None and (replay.mutation.op, replay.mutation.fraction) == ("null_fraction", 0.25)
    assert replay.why == "250 of 1,000 rows fail not_null_fct_orders_price"


def test_what_cannot_be_replayed_says_why() -> None:
    cases = [
        (failing("not_null_fct_orders_price", "price", 250), {}, "share of failing rows is unknown"),
        (failing("not_null_fct_orders_price", "price", None), {"marts.fct_orders": 10}, "no failed-row count"),
        (failing("freshness", None, None), {}, "table-level test names no column"),
        (failing("unique_fct_orders_id", "id", 3), {"marts.fct_orders": 10}, "no mutation replays a failing uniqueness"),
        (Finding("upstream_staleness", Severity.WARN, TABLE, "stale", cause=TABLE), {}, STALE_REASON),
    ]
    for finding, rows, why in cases:
        replays, reason = replays_for(finding, COLUMNS, LC, MC, rows)
        assert replays == [] and why in (reason or ""), (finding.evidence, reason)
