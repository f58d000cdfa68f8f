"""A second foreign estate, for the precision rules: MCP JSON in the shapes DataHub's dbt, mlflow and feast
sources write, dated around the moment the test runs, loaded with the file source like ``datahub ingest``.

* ``shop.marts.mart.total`` is built from ``raw.lines.amount`` and ``qty``; ``shop.marts.qty_mart.qty``
  from ``qty`` alone. The dbt test on ``total`` passed five times, then failed thirty hourly runs.
* ``total_model`` reads ``total``: version 1 trained before the streak; version 2 was fit before it and
  fine-tuned inside it (two training runs). ``qty_model`` reads only ``qty_mart.qty``, trained inside the
  streak, and serves traffic.
* ``risk_model`` trained on ``marts.trained``; its feature table is served from ``marts.serving``, which
  joins ``trained`` with ``raw.bureau``, a source training never read.
* ``rollout_model`` version 2 is the registry's production version, but the one endpoint listed under it
  records serving version 1 (a rollout that stalled); ``steady_model``'s endpoint serves its production
  version 2, as it should.
* ``alias_model`` reads ``total``, trained inside the streak; the registry marks it production and no
  deployment entity records it: it serves by its mark alone.
* ``marts.fees.fee`` (from ``raw.payments.fee``) passed its test every four hours, the last time 4 hours before
  it began failing; the platform stamps the table's newest change one hour before the first failure. ``fee_model`` version 1 trained
  before the last pass, version 2 between the last pass and that write, version 3 after the first failure.
* ``refunds_model`` trains on ``marts.refunds_daily``, which ``dbt build`` stopped building when the test on
  ``refunds_clean.reason`` (a column nothing below reads) began failing; ``returns_model`` is its twin built by
  ``dbt run`` then ``dbt test``, which kept building it.
* ``region_model``'s one feature reads ``mart.region`` (from ``raw.lines.region``, no origin of ``total``), but its
  training run, inside the streak, logged the whole of ``marts.mart`` as its input, as ``mlflow.log_input`` of a
  table does.
* ``raw.events`` reports an operation forty days old but a ``lastModified`` an hour old; ``raw.bureau``
  reports only the forty-day-old operation.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HOUR = 3_600_000
DAY = 24 * HOUR
STREAK = 30  # failing runs, more than the history_limit the tests read with


def dataset(name: str) -> str:
    return f"urn:li:dataset:(urn:li:dataPlatform:postgres,shop.{name},PROD)"


def field(name: str, column: str) -> str:
    return f"urn:li:schemaField:({dataset(name)},{column})"


def model(name: str) -> str:
    return f"urn:li:mlModel:(urn:li:dataPlatform:mlflow,{name},PROD)"


def _mcp(urn: str, aspect: str, value: dict[str, Any]) -> dict[str, Any]:
    entity = urn.split(":")[2]
    return {"entityType": entity, "entityUrn": urn, "changeType": "UPSERT", "aspectName": aspect,
            "aspect": {"json": value}}


def _table(name: str, columns: list[str], upstreams: dict[str, list[tuple[str, str]]] | None = None,
           operation_ms: int | None = None, last_modified_ms: int | None = None) -> list[dict[str, Any]]:
    """A table as the dbt source writes it; ``upstreams`` maps each upstream table to (its column, ours)."""
    props: dict[str, Any] = {"name": name.split(".")[-1], "customProperties": {}, "tags": []}
    if last_modified_ms is not None:
        props["lastModified"] = {"time": last_modified_ms}
    out = [
        _mcp(dataset(name), "datasetProperties", props),
        _mcp(dataset(name), "schemaMetadata", {
            "schemaName": name, "platform": "urn:li:dataPlatform:postgres", "version": 0, "hash": "",
            "platformSchema": {"com.linkedin.schema.MySqlDDL": {"tableSchema": ""}},
            "fields": [{"fieldPath": c, "nullable": True, "type": {"type": {"com.linkedin.schema.NumberType": {}}},
                        "nativeDataType": "numeric", "recursive": False, "isPartOfKey": False} for c in columns],
        }),
    ]
    if upstreams:
        out.append(_mcp(dataset(name), "upstreamLineage", {
            "upstreams": [{"auditStamp": {"time": 0, "actor": "urn:li:corpuser:unknown"}, "dataset": dataset(u),
                           "type": "TRANSFORMED"} for u in upstreams],
            "fineGrainedLineages": [
                {"upstreamType": "FIELD_SET", "upstreams": [field(u, theirs)], "downstreamType": "FIELD",
                 "downstreams": [field(name, ours)], "confidenceScore": 0.9}
                for u, pairs in upstreams.items() for theirs, ours in pairs
            ],
        }))
    if operation_ms is not None:
        out.append(_mcp(dataset(name), "operation", {
            "timestampMillis": operation_ms, "lastUpdatedTimestamp": operation_ms, "operationType": "INSERT",
            "actor": "urn:li:corpuser:loader",
        }))
    return out


def _run(name: str, inputs: list[str], start_ms: int) -> list[dict[str, Any]]:
    urn = f"urn:li:dataProcessInstance:{name}"
    return [
        _mcp(urn, "dataProcessInstanceProperties", {"name": name, "type": "BATCH_AD_HOC",
                                                    "created": {"time": start_ms, "actor": "urn:li:corpuser:ml"}}),
        _mcp(urn, "dataProcessInstanceInput", {"inputs": [dataset(i) for i in inputs]}),
        _mcp(urn, "dataProcessInstanceRunEvent", {"timestampMillis": start_ms, "status": "STARTED"}),
        _mcp(urn, "dataProcessInstanceRunEvent", {
            "timestampMillis": start_ms + 600_000, "status": "COMPLETE", "durationMillis": 600_000,
            "result": {"type": "SUCCESS", "nativeResultType": "mlflow"},
        }),
    ]


def _version(group: str, version: int, runs: list[str], features: list[str], deployment: str | None = None,
             serves: int | None = None, stage: str | None = None) -> list[dict[str, Any]]:
    """A version as the mlflow source writes it; its ``deployment`` records serving ``serves`` (this version
    unless said), as a SageMaker or Vertex endpoint records it; ``stage`` is the registry's stage tag."""
    props: dict[str, Any] = {
        "name": f"{group}_{version}", "customProperties": {}, "version": {"versionTag": str(version)},
        "trainingJobs": [f"urn:li:dataProcessInstance:{r}" for r in runs], "mlFeatures": features,
        "groups": [f"urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,{group},PROD)"], "tags": [],
    }
    out = []
    if deployment:
        urn = f"urn:li:mlModelDeployment:(urn:li:dataPlatform:mlflow,{deployment},PROD)"
        props["deployments"] = [urn]
        out.append(_mcp(urn, "mlModelDeploymentProperties", {
            "customProperties": {}, "version": {"versionTag": str(serves or version)}, "status": "IN_SERVICE"}))
    if stage:
        out.append(_mcp(model(f"{group}_{version}"), "globalTags", {"tags": [{"tag": f"urn:li:tag:mlflow_{stage}"}]}))
    return [
        _mcp(f"urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,{group},PROD)", "mlModelGroupProperties",
             {"name": group, "customProperties": {}}),
        _mcp(model(f"{group}_{version}"), "mlModelProperties", props),
        *out,
    ]


def _build(table: str, invocation: str, at_ms: int) -> list[dict[str, Any]]:
    """One successful dbt build of ``table`` as DataHub's dbt source records it from ``run_results.json`` (a skipped
    node it does not record at all)."""
    urn = f"urn:li:dataProcessInstance:{invocation}_{table}"
    return [
        _mcp(urn, "dataProcessInstanceProperties", {"name": f"{invocation}_{table}", "type": "BATCH_SCHEDULED",
                                                    "created": {"time": at_ms, "actor": "urn:li:corpuser:dbt"}}),
        _mcp(urn, "dataProcessInstanceOutput", {"outputs": [dataset(table)]}),
        _mcp(urn, "dataProcessInstanceRunEvent", {"timestampMillis": at_ms, "status": "STARTED"}),
        _mcp(urn, "dataProcessInstanceRunEvent", {
            "timestampMillis": at_ms + 60_000, "status": "COMPLETE", "durationMillis": 60_000,
            "result": {"type": "SUCCESS", "nativeResultType": "dbt"}}),
    ]


def _dbt_chain(name: str, streak_ms: int, skipped: bool) -> list[dict[str, Any]]:
    """``raw.<name>`` → ``marts.<name>_clean`` (amount, reason) → ``marts.<name>_daily`` (total, from amount), built
    by hourly dbt invocations; a not_null test on ``<name>_clean.reason`` (which feeds nothing below) passed three
    times and failed the last three. With ``skipped`` (``dbt build``) the daily table was not built again once the
    test failed; without it (``dbt run`` then ``dbt test``) every invocation built it. ``<name>_model`` trains on
    the daily table's ``total``."""
    clean, daily = f"marts.{name}_clean", f"marts.{name}_daily"
    invocations = [streak_ms + (i - 3) * HOUR for i in range(6)]
    return [
        *_table(f"raw.{name}", ["amount", "reason"]),
        *_table(clean, ["amount", "reason"], {f"raw.{name}": [("amount", "amount")]}),
        *_table(daily, ["total"], {clean: [("amount", "total")]}),
        *(mcp for i, at in enumerate(invocations) for mcp in _build(clean, f"{name}-inv-{i}", at - 2 * 60_000)),
        *(mcp for i, at in enumerate(invocations) if not skipped or at < streak_ms
          for mcp in _build(daily, f"{name}-inv-{i}", at + 60_000)),
        *_assertion(streak_ms, clean, "reason", passes=3, streak=3),
        *_features(f"{name}_stats", {"total": daily}),
        *_run(f"{name}-fit-1", [daily], streak_ms - 30 * 60_000),
        *_version(f"{name}_model", 1, [f"{name}-fit-1"], [f"urn:li:mlFeature:({name}_stats,total)"],
                  deployment=f"{name}-endpoint"),
    ]


def _features(table: str, columns: dict[str, str]) -> list[dict[str, Any]]:
    """A feast feature view: each feature named ``column`` reads the given source table."""
    urns = [f"urn:li:mlFeature:({table},{c})" for c in columns]
    return [
        _mcp(f"urn:li:mlFeatureTable:(urn:li:dataPlatform:feast,{table})", "mlFeatureTableProperties",
             {"customProperties": {}, "mlFeatures": urns, "mlPrimaryKeys": []}),
        *(_mcp(u, "mlFeatureProperties", {"dataType": "CONTINUOUS", "sources": [dataset(s)], "customProperties": {}})
          for u, s in zip(urns, columns.values())),
    ]


def _assertion(streak_start_ms: int, table: str = "marts.mart", column: str = "total", passes: int = 5,
               streak: int = STREAK, every: int = HOUR) -> list[dict[str, Any]]:
    """A dbt not_null test on ``table.column``: ``passes`` runs ``every`` apart, then ``streak`` failing ones."""
    name = f"not_null_{table.split('.')[-1]}_{column}"
    urn, on = f"urn:li:assertion:shop-{name.replace('_', '-')}", dataset(table)
    runs = [(streak_start_ms - (passes - i) * every, "SUCCESS") for i in range(passes)]
    runs += [(streak_start_ms + i * HOUR, "FAILURE") for i in range(streak)]
    return [
        _mcp(urn, "assertionInfo", {
            "type": "CUSTOM", "source": {"type": "EXTERNAL"},
            "customProperties": {"dbt_unique_id": f"test.shop.{name}"},
            "customAssertion": {"type": "dbt", "entity": on, "field": field(table, column),
                                "fields": [field(table, column)], "scope": "DATASET_COLUMN",
                                "operator": "NOT_NULL", "aggregation": "IDENTITY", "nativeType": "not_null"},
        }),
        *(_mcp(urn, "assertionRunEvent", {
            "timestampMillis": at, "runId": f"inv-{at}", "asserteeUrn": on, "assertionUrn": urn, "status": "COMPLETE",
            "result": {"type": result, "nativeResults": {"failures": "7"} if result == "FAILURE" else {}},
        }) for at, result in runs),
    ]


def write_estate(path: Path, now_ms: int) -> Path:
    """The estate as MCP JSON at ``path``, its streak ending an hour before ``now_ms``."""
    streak = now_ms - (STREAK + 1) * HOUR
    fees = now_ms - 5 * HOUR  # the fee test's first failure
    old = now_ms - 40 * DAY
    mcps = [
        *_table("raw.lines", ["amount", "qty", "region"], operation_ms=now_ms - HOUR),
        *_table("marts.mart", ["total", "region"],
                {"raw.lines": [("amount", "total"), ("qty", "total"), ("region", "region")]}, now_ms - HOUR),
        *_table("marts.qty_mart", ["qty"], {"raw.lines": [("qty", "qty")]}, now_ms - HOUR),
        *_assertion(streak),
        *_features("mart_stats", {"total": "marts.mart"}),
        *_features("region_stats", {"region": "marts.mart"}),
        *_dbt_chain("refunds", now_ms - 3 * HOUR, skipped=True),
        *_dbt_chain("returns", now_ms - 3 * HOUR, skipped=False),
        *_table("raw.payments", ["fee"]),
        *_table("marts.fees", ["fee"], {"raw.payments": [("fee", "fee")]}, last_modified_ms=fees - HOUR),
        *_assertion(fees, "marts.fees", "fee", passes=3, streak=3, every=4 * HOUR),
        *_features("fee_stats", {"fee": "marts.fees"}),
        *(mcp for v, at in ((1, fees - 14 * HOUR), (2, fees - 3 * HOUR), (3, fees + HOUR)) for mcp in (
            *_run(f"fee-fit-{v}", ["marts.fees"], at),
            *_version("fee_model", v, [f"fee-fit-{v}"], ["urn:li:mlFeature:(fee_stats,fee)"],
                      deployment="fee-endpoint" if v == 3 else None))),
        *_run("region-fit-1", ["marts.mart"], streak + 3 * HOUR),
        *_version("region_model", 1, ["region-fit-1"], ["urn:li:mlFeature:(region_stats,region)"],
                  deployment="region-endpoint"),
        *_features("qty_stats", {"qty": "marts.qty_mart"}),
        *_run("total-fit-1", ["marts.mart"], streak - 3 * DAY),
        *_run("total-fit-2", ["marts.mart"], streak - DAY),
        *_run("total-finetune-2", ["marts.mart"], streak + 10 * HOUR),
        *_version("total_model", 1, ["total-fit-1"], ["urn:li:mlFeature:(mart_stats,total)"]),
        *_version("total_model", 2, ["total-fit-2", "total-finetune-2"], ["urn:li:mlFeature:(mart_stats,total)"],
                  deployment="total-endpoint"),
        *_run("qty-fit-1", ["marts.qty_mart"], streak + 2 * HOUR),
        *_version("qty_model", 1, ["qty-fit-1"], ["urn:li:mlFeature:(qty_stats,qty)"], deployment="qty-endpoint"),
        *_table("raw.events", ["score"], operation_ms=old, last_modified_ms=now_ms - HOUR),
        *_table("raw.bureau", ["rating"], operation_ms=old),
        *_table("marts.trained", ["score"], {"raw.events": [("score", "score")]}, now_ms - HOUR),
        *_table("marts.serving", ["score", "rating"],
                {"marts.trained": [("score", "score")], "raw.bureau": [("rating", "rating")]}, now_ms - HOUR),
        *_features("risk_features", {"score": "marts.serving"}),
        *_run("risk-fit-1", ["marts.trained"], now_ms - 2 * DAY),
        *_version("risk_model", 1, ["risk-fit-1"], ["urn:li:mlFeature:(risk_features,score)"],
                  deployment="risk-endpoint"),
        *_table("marts.orders", ["n"], operation_ms=now_ms - HOUR),
        *_features("order_stats", {"n": "marts.orders"}),
        *(mcp for name in ("rollout", "steady") for v in (1, 2)
          for mcp in _run(f"{name}-fit-{v}", ["marts.orders"], now_ms - (4 - v) * DAY)),
        *_version("rollout_model", 1, ["rollout-fit-1"], ["urn:li:mlFeature:(order_stats,n)"]),
        *_version("rollout_model", 2, ["rollout-fit-2"], ["urn:li:mlFeature:(order_stats,n)"],
                  deployment="rollout-west", serves=1, stage="production"),
        *_version("steady_model", 1, ["steady-fit-1"], ["urn:li:mlFeature:(order_stats,n)"]),
        *_version("steady_model", 2, ["steady-fit-2"], ["urn:li:mlFeature:(order_stats,n)"],
                  deployment="steady-west", stage="production"),
        *_run("alias-fit-1", ["marts.mart"], streak + 5 * HOUR),
        *_version("alias_model", 1, ["alias-fit-1"], ["urn:li:mlFeature:(mart_stats,total)"], stage="production"),
    ]
    path.write_text(json.dumps(mcps, indent=1))
    return path
