"""What the orchestrator saw is matched to the training inputs by name, through their twins; a name that is not
one input proves nothing."""

from __future__ import annotations

from tests.scan.scan_closures import closure, ds, run, urn

from recall_dagster.lifecycle.observed import Observed, observed_inputs


def seen(table: str, at: int, rows: int | None = None) -> Observed:
    return Observed(table, at, rows, f"Dagster asset {table}, run {at}")


def test_an_observation_names_its_input_and_the_newest_wins() -> None:
    c = closure(runs=[run("r", "marts.orders", "marts.customers")], datasets=[ds("marts.orders"), ds("marts.customers")])
    found = observed_inputs(c, c.training_inputs, [seen("db.marts.orders", 1), seen("marts.orders", 5, 10),
                                                    seen("other.table", 9)])
    assert found == {urn("marts.orders"): seen("marts.orders", 5, 10)}


def test_a_name_that_fits_several_inputs_is_left_out() -> None:
    c = closure(runs=[run("r", "eu.orders", "us.orders")], datasets=[ds("eu.orders"), ds("us.orders")])
    assert observed_inputs(c, c.training_inputs, [seen("orders", 1)]) == {}
    assert observed_inputs(c, c.training_inputs, [seen("eu.orders", 1)]) == {urn("eu.orders"): seen("eu.orders", 1)}
