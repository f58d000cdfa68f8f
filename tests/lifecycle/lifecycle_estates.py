"""Hand-made estates for the lifecycle's pure core: a bad price load, as the demo has it, in miniature.

``raw.orders.unit_price`` feeds ``stg_orders.unit_price`` (dbt node, with a
warehouse twin), which feeds ``fct_transactions.unit_price`` and
``amount_to_price_ratio``; the fraud model reads four features from
``fct_transactions``, one of them by name only.
"""

from __future__ import annotations

from typing import Iterable, Mapping, Sequence

from recall_dagster.estate import (
    ColumnEdge,
    Dataset,
    Deployment,
    Feature,
    Model,
    ModelClosure,
    SchemaField,
    TrainingRun,
)
from recall_dagster.estate.columns import column_graph
from recall_dagster.lifecycle.records import AssertionRecord, AssertionRun, Estate, TrainingSpan

HOUR = 3_600_000
T0 = 1_700_000_000_000  # an arbitrary epoch instant the histories count from


def at(hours: float) -> int:
    return T0 + int(hours * HOUR)


def urn(platform: str, name: str) -> str:
    return f"urn:li:dataset:(urn:li:dataPlatform:{platform},warehouse.{name},PROD)"


RAW = urn("postgres", "raw.orders")
STG = urn("dbt", "staging.stg_orders")
STG_PG = urn("postgres", "staging.stg_orders")
FCT = urn("dbt", "marts.fct_transactions")
FCT_PG = urn("postgres", "marts.fct_transactions")
DEVICE = urn("postgres", "marts.fct_device_features")
GROUP = "urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,fraud_detector,PROD)"


def model_urn(version: int, name: str = "fraud_detector") -> str:
    return f"urn:li:mlModel:(urn:li:dataPlatform:mlflow,{name}_{version},PROD)"


def _fields(*names: str) -> tuple[SchemaField, ...]:
    return tuple(SchemaField(n, "numeric") for n in names)


def _edges(pairs: Iterable[tuple[str, str, str, str]]) -> tuple[ColumnEdge, ...]:
    return tuple(ColumnEdge((u, uc), (d, dc)) for u, uc, d, dc in pairs)


def datasets() -> dict[str, Dataset]:
    """The warehouse: twins joined by COPY, column lineage spread over them as DataHub's sources leave it."""
    return {
        RAW: Dataset(RAW, "warehouse.raw.orders", fields=_fields("order_id", "unit_price")),
        STG: Dataset(
            STG, "warehouse.staging.stg_orders", fields=_fields("order_id", "unit_price"), upstreams=(RAW,),
            column_lineage=_edges([(RAW, "unit_price", STG, "unit_price")]),
        ),
        STG_PG: Dataset(STG_PG, "warehouse.staging.stg_orders", upstreams=(STG,), copy_of=STG),
        FCT: Dataset(
            FCT, "warehouse.marts.fct_transactions",
            fields=_fields("amount", "hour_of_day", "unit_price", "amount_to_price_ratio"),
            upstreams=(STG_PG,),
            column_lineage=_edges([
                (STG_PG, "unit_price", FCT, "unit_price"),
                (STG_PG, "unit_price", FCT, "amount_to_price_ratio"),
            ]),
        ),
        FCT_PG: Dataset(
            FCT_PG, "warehouse.marts.fct_transactions", upstreams=(FCT,), copy_of=FCT,
            column_lineage=_edges([(FCT, "unit_price", FCT_PG, "unit_price")]),
        ),
        DEVICE: Dataset(DEVICE, "warehouse.marts.fct_device_features", fields=_fields("ip_risk_score")),
    }


FRAUD_FEATURES: tuple[tuple[str, str, str | None], ...] = (
    ("txn_amount", FCT_PG, "amount"),
    ("order_unit_price", FCT_PG, "unit_price"),
    ("amount_to_price_ratio", FCT_PG, None),  # no source-column property: matched by name
    ("device_ip_risk_score", DEVICE, "ip_risk_score"),
)


def closure(
    version: int,
    *,
    name: str = "fraud_detector",
    group: str = GROUP,
    features: Sequence[tuple[str, str, str | None]] = FRAUD_FEATURES,
    live: bool = False,
    views: Mapping[str, Dataset] | None = None,
) -> ModelClosure:
    model = model_urn(version, name)
    run = f"urn:li:dataProcessInstance:{name}-{version}"
    feats = tuple(
        Feature(f"urn:li:mlFeature:(features,{n})", n, sources=(src,), column=col) for n, src, col in features
    )
    deployments = (Deployment(f"urn:li:mlModelDeployment:(urn:li:dataPlatform:recall,{name}-api,PROD)", "api", live=True),) if live else ()
    return ModelClosure(
        model=Model(model, f"{name}_{version}", version=str(version), groups=(group,), features=tuple(f.urn for f in feats)),
        production=live,
        features=feats,
        training_runs=(TrainingRun(run, run, inputs=(FCT_PG,)),),
        deployments=deployments,
        datasets=dict(views if views is not None else datasets()),
    )


def estate(closures: Sequence[ModelClosure]) -> Estate:
    return Estate(
        closures=tuple(closures),
        columns=column_graph(closures),
        datasets={u: d for c in closures for u, d in c.datasets.items()},
    )


def record(
    runs: Sequence[tuple[float | None, str]],
    *,
    urn_: str = "urn:li:assertion:fct-price",
    dataset: str = FCT,
    column: str | None = "unit_price",
    rows: int | None = 223,
    writes: Sequence[float] = (),
) -> AssertionRecord:
    """An assertion history from (hours after T0 or None, result) pairs, given oldest first."""
    history = tuple(
        AssertionRun(at(h) if h is not None else None, result, rows if result == "FAILURE" else None)
        for h, result in reversed(runs)
    )
    return AssertionRecord(
        urn=urn_, name=f"not_null_{column}", dataset=dataset, column=column, kind=f"not_null_{column}",
        runs=history, writes_ms=tuple(at(w) for w in writes),
    )


def span_for(start: float | None, end: float | None) -> TrainingSpan:
    """A training run from hours after T0; None for a time the record lacks."""
    return TrainingSpan(
        "urn:li:dataProcessInstance:run", at(start) if start is not None else None, at(end) if end is not None else None
    )
