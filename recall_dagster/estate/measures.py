"""What a failing assertion measured, under its own name and beside the bound it broke.

An on-call engineer reads "1,520 failing rows" as 1,520 bad records; when the check counted the table
(1,520 rows against a floor of 40,000), measured a mean or a null fraction, or timed a source's last load,
that sentence sends them after the wrong problem. DataHub keeps what each runner measured: the assertion's
aggregation or metric (Great Expectations' action, DataHub's own assertions), ``actualAggValue`` and the
native results of each run (``observed_value``; dbt's source freshness records the load's age), and the
bound in the assertion's parameters or, for dbt's freshness, its ``error_after`` properties. Failing rows stay
the words for a check that counted failing rows.
"""

from __future__ import annotations

from typing import Any, Mapping

from datahub.metadata.schema_classes import AssertionInfoClass, AssertionStdParametersClass

# A dataset assertion whose value is the count of failing rows (a check on each value of a column), not a
# measurement of its own. A runner's own kind of check (``_NATIVE_``) reports what it observed: Great
# Expectations' action writes an expectation's ``observed_value`` there, a null fraction or a quantile.
ROWS_AGGREGATIONS = frozenset({"IDENTITY", None})
NAMED = {"_native_": "observed value"}
FRESHNESS_AGE = "max_loaded_at_time_ago_in_s"  # what DataHub's dbt source records of a source freshness run
FRESHNESS_LAG = "freshness_lag_hours"  # the name Recall gives that age, in hours
OPERATORS = {"GREATER_THAN": ">", "GREATER_THAN_OR_EQUAL_TO": "≥", "LESS_THAN": "<", "LESS_THAN_OR_EQUAL_TO": "≤",
             "EQUAL_TO": "=", "NOT_EQUAL_TO": "≠"}


def metric_name(info: AssertionInfoClass | None) -> str | None:
    """What ``actualAggValue`` measures when it is not a count of failing rows; None when it is one."""
    if info is None:
        return "value"  # nobody said what was measured: never read it as rows
    if info.volumeAssertion is not None:
        return "row_count"
    field_metric = info.fieldAssertion.fieldMetricAssertion if info.fieldAssertion else None
    if field_metric is not None:
        return str(field_metric.metric).lower()
    aggregation = info.datasetAssertion.aggregation if info.datasetAssertion else None
    if info.datasetAssertion is not None and aggregation in ROWS_AGGREGATIONS:
        return None
    return NAMED.get(str(aggregation).lower(), str(aggregation).lower()) if aggregation else "value"


def _number(text: object) -> float | None:
    try:
        return float(str(text))
    except ValueError:
        return None


def _shown(value: float) -> str:
    return f"{value:,.0f}" if value == int(value) and abs(value) < 1e15 else f"{value:,.4g}"


def _bound(operator: object, parameters: AssertionStdParametersClass | None) -> str:
    """The bound a measurement is held to, as ", expected between 40,000 and 60,000"; empty when not said."""
    if parameters is None:
        return ""

    def said(parameter: Any) -> str | None:
        value = _number(parameter.value) if parameter is not None else None
        return _shown(value) if value is not None else None

    low, high, value = said(parameters.minValue), said(parameters.maxValue), said(parameters.value)
    if low and high:
        return f", expected between {low} and {high}"
    if low or high:
        return f", expected {'≥ ' + low if low else '≤ ' + str(high)}"
    symbol = OPERATORS.get(str(operator))
    return f", expected {symbol} {value}" if value and symbol else ""


def held_to(info: AssertionInfoClass | None) -> str:
    """The bound the assertion holds its measurement to (", expected ≥ 40,000"; a dbt source freshness's
    ", expected within 12 hours"); empty when it says none."""
    if info is None:
        return ""
    count, period = ((info.customProperties or {}).get(f"error_after_{k}") for k in ("count", "period"))
    if count and period:
        return f", expected within {count} {period}{'s' if count != '1' else ''}"
    if info.volumeAssertion is not None and info.volumeAssertion.rowCountTotal is not None:
        total = info.volumeAssertion.rowCountTotal
        return _bound(total.operator, total.parameters)
    field_metric = info.fieldAssertion.fieldMetricAssertion if info.fieldAssertion else None
    if field_metric is not None:
        return _bound(field_metric.operator, field_metric.parameters)
    if info.datasetAssertion is not None:
        return _bound(info.datasetAssertion.operator, info.datasetAssertion.parameters)
    return ""


def measurement(info: AssertionInfoClass | None, value: float | None,
                native: Mapping[str, str] | None) -> tuple[str, float] | None:
    """A run's measurement under its own name (``row_count``, ``mean``, ``freshness_lag_hours``...) and its
    value; None for a check that counted failing rows, or measured nothing it says."""
    native = native or {}
    age = _number(native.get(FRESHNESS_AGE, ""))
    if age is not None:
        return FRESHNESS_LAG, age / 3600
    name = metric_name(info)
    if name is None:
        return None
    observed = value if value is not None else _number(native.get("observed_value", ""))
    return (name, observed) if observed is not None else None


def measured(info: AssertionInfoClass | None, value: float | None, native: Mapping[str, str] | None) -> str | None:
    """A run's measurement as an engineer reads it ("row_count 1,520, expected ≥ 40,000", "freshness lag
    30.0 h, expected within 12 hours"); None for a check that counted failing rows, or measured nothing it says."""
    found = measurement(info, value, native)
    return metric_text(*found, held_to(info)) if found is not None else None


def metric_text(name: str, value: float, bound: str) -> str:
    """A measurement under its own name beside the bound it is held to ("row_count 1,520, expected ≥ 40,000");
    a freshness lag in hours, as an engineer reads an age."""
    if name == FRESHNESS_LAG:
        return f"freshness lag {value:,.1f} h{bound}"
    return f"{name} {_shown(value)}{bound}"


def weight_text(failed_rows: int | None, measured: str | None) -> str | None:
    """What a failure weighed, as every report says it: the rows it counted failing, or what it measured."""
    parts = ([f"{failed_rows:,} failing rows"] if failed_rows is not None else []) + ([measured] if measured else [])
    return ", ".join(parts) or None


def assertion_weight(failed_rows: int | None, metric: tuple[str, float] | None, bound: str) -> str | None:
    """:func:`weight_text` of one run as the estate keeps it: its metric under its own name, beside its bound."""
    return weight_text(failed_rows, metric_text(*metric, bound) if metric is not None else None)
