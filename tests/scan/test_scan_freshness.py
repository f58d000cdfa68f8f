"""Freshness takes the newest evidence among operations, lastModified and the configured property."""

from __future__ import annotations

from recall_dagster.estate.views import Dataset

DAY = 86_400_000
NOW = 100 * DAY
URN = "urn:li:dataset:(urn:li:dataPlatform:postgres,warehouse.marts.fct_orders,PROD)"


def dataset(**kwargs) -> Dataset:
    return Dataset(urn=URN, name="warehouse.marts.fct_orders", **kwargs)


def test_an_old_operation_loses_to_a_newer_last_modified() -> None:
    seen = dataset(operations_ms=((60 * DAY, 60 * DAY),), last_modified_ms=99 * DAY).freshness_at(NOW)
    assert (seen.updated_ms, seen.source) == (99 * DAY, "lastModified")


def test_the_newest_signal_wins_whichever_carries_it() -> None:
    stamped = dataset(
        operations_ms=((98 * DAY, 98 * DAY),), last_modified_ms=90 * DAY,
        property_updated_ms=99 * DAY, property_name="last_refreshed_at",
    )
    assert stamped.freshness_at(NOW).source == "property:last_refreshed_at"
    assert stamped.freshness_at(98 * DAY + 1).source == "operation", "as of then, the property had not been set"


def test_a_tie_goes_to_the_most_direct_signal_and_no_signal_is_none() -> None:
    assert dataset(operations_ms=((99 * DAY, 99 * DAY),), last_modified_ms=99 * DAY).freshness_at(NOW).source == (
        "operation"
    )
    assert dataset().freshness_at(NOW) is None
