"""``recall protect``'s pure core: reliability scores, untested critical columns, and the dbt tests to add.

Built on the lifecycle's hand-made price estate: ``raw.orders.unit_price`` feeds
``stg_orders.unit_price`` (dbt node + warehouse twin), which feeds
``fct_transactions.unit_price`` and ``amount_to_price_ratio`` (dbt node + twin);
the fraud model reads four features, one of them by name only.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Mapping, Sequence

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).parents[1] / "lifecycle"))

from lifecycle_estates import (  # noqa: E402
    DEVICE,
    FCT,
    FCT_PG,
    GROUP,
    HOUR,
    RAW,
    STG,
    STG_PG,
    at,
    closure,
    datasets,
    estate,
)

from recall_dagster.detect import ScanConfig  # noqa: E402
from recall_dagster.estate import Dataset, ModelClosure  # noqa: E402
from recall_dagster.estate.views import Assertion, Deployment, Owner, Term  # noqa: E402
from recall_dagster.estate.dbt import DbtNode  # noqa: E402
from recall_dagster.estate.columns import Col, column_graph  # noqa: E402
from recall_dagster.lifecycle.incidents import ACTIVE, RESOLVED, IncidentEntry  # noqa: E402
from recall_dagster.protect.assess import Gap, Reliability, gaps, reliability  # noqa: E402
from recall_dagster.protect.assess import tests_yaml as _tests_yaml  # noqa: E402  (not collected as a test)
from recall_dagster.protect.config import COMPONENTS, ProtectConfig, ProtectWeights
from recall_dagster.config.load import load  # noqa: E402

NOW = at(100)


@pytest.fixture(scope="module")
def pc() -> ProtectConfig:
    return load().protect


@pytest.fixture(scope="module")
def config() -> ScanConfig:
    """The shipped scan config, its freshness pinned to the shipped 7-day default whatever a local layer says."""
    loaded = load().scan
    return replace(loaded, freshness=loaded.freshness.model_copy(update={"default_window_hours": 168.0,
                                                                        "windows": {}}))


# --- builders -----------------------------------------------------------------------------------------------


def healthy(dataset: Dataset, *, column: str | None = None) -> Dataset:
    """A dataset with every component satisfied: a test, changed an hour ago, an active owner, a description."""
    return replace(
        dataset,
        assertions=(Assertion(f"urn:li:assertion:{dataset.urn}", "row_count", column, "SUCCESS"),),
        operations_ms=((NOW - HOUR, NOW - HOUR),),
        owners=(Owner("urn:li:corpuser:ana"),),
        description="Curated and watched.",
    )


def all_healthy() -> dict[str, Dataset]:
    return {u: healthy(d) for u, d in datasets().items()}


def incident(*origins: Col, poisoned: Sequence[str] = (), state: str = RESOLVED, n: int = 1) -> IncidentEntry:
    snapshot: Mapping = {"blast_radius": {"poisoned_columns": list(poisoned)}} if poisoned else {}
    return IncidentEntry(
        id=f"inc-{n}",
        urn=f"urn:li:incident:inc-{n}",
        state=state,
        origins=tuple(origins),
        assertions=("urn:li:assertion:fct-price",),
        raised_at_ms=at(10 + n),
        updated_at_ms=at(11 + n),
        fingerprint=f"fp-{n}",
        snapshot=snapshot,
    )


def score(
    closures: Sequence[ModelClosure], config: ScanConfig, pc: ProtectConfig,
    entries: Sequence[IncidentEntry] = (), now_ms: int = NOW,
) -> dict[str, Reliability]:
    return {r.dataset: r for r in reliability(closures, column_graph(closures), entries, config, pc, now_ms)}


def components(r: Reliability) -> dict[str, tuple[float, str]]:
    return {c.name: (c.value, c.why) for c in r.components}


def find_gaps(closures: Sequence[ModelClosure], entries: Sequence[IncidentEntry] = ()) -> tuple[Gap, ...]:
    return gaps(closures, column_graph(closures), entries)


def by_column(found: Sequence[Gap]) -> dict[Col, Gap]:
    return {g.column: g for g in found}


def other_model(name: str, features: Sequence[tuple[str, str, str | None]], *, live: bool,
                views: Mapping[str, Dataset] | None = None) -> ModelClosure:
    """A second registered model over the same warehouse, with its own group and deployment."""
    return closure(
        1, name=name, group=f"urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,{name},PROD)",
        features=features, live=live, views=views,
    )


# --- reliability --------------------------------------------------------------------------------------------


def test_a_dataset_meeting_every_component_scores_100_with_every_reason_positive(
    config: ScanConfig, pc: ProtectConfig
) -> None:
    scores = score([closure(1, views=all_healthy())], config, pc)
    assert set(scores) == {RAW, STG, FCT, DEVICE}, "one entry per table: twins collapse onto their canonical URN"
    for r in scores.values():
        assert r.score == 100
        assert [c.name for c in r.components] == list(COMPONENTS)
        assert all(c.value == 1.0 for c in r.components)
        assert [c.weight for c in r.components] == [pc.weights.of(n) for n in COMPONENTS]
    why = components(scores[FCT])
    assert why["tests"][1] == "an assertion watches it"
    assert why["freshness"][1] == "changed 1 h ago, within 168 h"
    assert why["owner"][1] == "an active owner"
    assert why["documentation"][1] == "described or given a term"
    assert why["incidents"][1] == "no past incident"


MISSING: dict[str, tuple[dict, str]] = {
    "tests": ({"assertions": ()}, "no test or assertion on it"),
    "freshness": ({"operations_ms": ((NOW - 200 * HOUR, NOW - 200 * HOUR),)}, "changed 200 h ago, past its 168 h window"),
    "owner": ({"owners": (Owner("urn:li:corpuser:gone", active=False),)}, "no active owner"),
    "documentation": ({"description": None}, "no description or term"),
}


@pytest.mark.parametrize("component", list(MISSING))
def test_each_missing_component_costs_exactly_its_weight_and_says_why(
    component: str, config: ScanConfig, pc: ProtectConfig
) -> None:
    changes, why = MISSING[component]
    views = all_healthy()
    views[DEVICE] = replace(views[DEVICE], **changes)
    scores = score([closure(1, views=views)], config, pc)
    device = scores[DEVICE]
    assert device.score == round(100 - pc.weights.of(component))
    assert components(device)[component] == (0.0, why)
    assert all(c.value == 1.0 for c in device.components if c.name != component), "only that component drops"
    assert all(r.score == 100 for u, r in scores.items() if u != DEVICE), "other tables are untouched"


def test_missing_everything_leaves_only_the_incident_points(config: ScanConfig, pc: ProtectConfig) -> None:
    scores = score([closure(1)], config, pc)  # the bare estate: no tests, times, owners or docs
    assert {r.score for r in scores.values()} == {round(pc.weights.of("incidents"))}


def test_unknown_freshness_costs_the_freshness_points(config: ScanConfig, pc: ProtectConfig) -> None:
    views = all_healthy()
    for urn in (FCT, FCT_PG):
        views[urn] = replace(views[urn], operations_ms=(), last_modified_ms=None, property_updated_ms=None)
    fct = score([closure(1, views=views)], config, pc)[FCT]
    assert components(fct)["freshness"] == (0.0, "nobody records when it changes")
    assert fct.score == round(100 - pc.weights.of("freshness"))


def test_a_change_recorded_only_after_the_instant_is_unknown_freshness(config: ScanConfig, pc: ProtectConfig) -> None:
    views = all_healthy()
    for urn in (FCT, FCT_PG):
        views[urn] = replace(views[urn], operations_ms=((NOW + HOUR, NOW + HOUR),))
    fct = score([closure(1, views=views)], config, pc)[FCT]
    assert components(fct)["freshness"] == (0.0, "nobody records when it changes")


def test_freshness_window_is_inclusive_and_any_twin_or_signal_may_vouch(config: ScanConfig, pc: ProtectConfig) -> None:
    window = config.freshness.default_window_hours
    views = all_healthy()
    # the dbt node records nothing; the warehouse twin's lastModified sits exactly on the window's edge
    views[FCT] = replace(views[FCT], operations_ms=())
    views[FCT_PG] = replace(views[FCT_PG], operations_ms=(), last_modified_ms=NOW - int(window * HOUR))
    fct = score([closure(1, views=views)], config, pc)[FCT]
    assert components(fct)["freshness"] == (1.0, f"changed {window:.0f} h ago, within {window:g} h")
    assert fct.score == 100
    # one millisecond-hour past it and the points go
    views[FCT_PG] = replace(views[FCT_PG], last_modified_ms=NOW - int((window + 1) * HOUR))
    fct = score([closure(1, views=views)], config, pc)[FCT]
    assert components(fct)["freshness"][0] == 0.0
    assert fct.score == round(100 - pc.weights.of("freshness"))


def test_the_newest_change_on_any_twin_wins(config: ScanConfig, pc: ProtectConfig) -> None:
    views = all_healthy()
    views[FCT] = replace(views[FCT], operations_ms=((NOW - 500 * HOUR, NOW - 500 * HOUR),))  # stale dbt node
    views[FCT_PG] = replace(views[FCT_PG], operations_ms=((NOW - 3 * HOUR, NOW - 3 * HOUR),))  # fresh warehouse twin
    assert components(score([closure(1, views=views)], config, pc)[FCT])["freshness"][0] == 1.0


def test_a_configured_window_decides_freshness(config: ScanConfig, pc: ProtectConfig) -> None:
    tight = replace(config, freshness=config.freshness.model_copy(update={"windows": {"*.fct_device_features": 2.0}}))
    views = all_healthy()
    views[DEVICE] = replace(views[DEVICE], operations_ms=((NOW - 5 * HOUR, NOW - 5 * HOUR),))
    scores = score([closure(1, views=views)], tight, pc)
    assert components(scores[DEVICE])["freshness"] == (0.0, "changed 5 h ago, past its 2 h window")
    assert scores[FCT].score == 100, "the default window still holds elsewhere"


def test_a_window_configured_on_the_warehouse_twin_applies_to_its_table(config: ScanConfig, pc: ProtectConfig) -> None:
    """The scan's upstream_staleness detector flags FCT_PG stale under this window; protect must agree."""
    tight = replace(config, freshness=config.freshness.model_copy(update={"windows": {FCT_PG: 1.0}}))
    views = all_healthy()
    views[FCT] = replace(views[FCT], operations_ms=())
    views[FCT_PG] = replace(views[FCT_PG], operations_ms=((NOW - 10 * HOUR, NOW - 10 * HOUR),))
    assert components(score([closure(1, views=views)], tight, pc)[FCT])["freshness"][0] == 0.0


def test_tests_owner_and_documentation_count_from_any_twin(config: ScanConfig, pc: ProtectConfig) -> None:
    views = all_healthy()
    views[STG] = replace(views[STG], assertions=(), owners=(), description=None)
    views[STG_PG] = replace(
        views[STG_PG], assertions=(Assertion("urn:li:assertion:stg", "not_null_order_id", "order_id", "FAILURE"),),
        owners=(Owner("urn:li:corpuser:old", active=False), Owner("urn:li:corpuser:bo")),
        description=None, terms=(Term("urn:li:glossaryTerm:orders", "Orders"),),
    )
    stg = score([closure(1, views=views)], config, pc)[STG]
    assert stg.score == 100, "a failing assertion still watches it; a glossary term documents it"


def test_an_owner_who_left_is_no_owner(config: ScanConfig, pc: ProtectConfig) -> None:
    views = all_healthy()
    views[RAW] = replace(views[RAW], owners=(Owner("urn:li:corpuser:left", active=False),))
    raw = score([closure(1, views=views)], config, pc)[RAW]
    assert components(raw)["owner"] == (0.0, "no active owner")


@pytest.mark.parametrize("count", [1, 2, 3, 5])
def test_past_incidents_cost_proportionally_up_to_incident_memory(
    count: int, config: ScanConfig, pc: ProtectConfig
) -> None:
    entries = [incident((RAW, "unit_price"), n=i) for i in range(count)]
    raw = score([closure(1, views=all_healthy())], config, pc, entries)[RAW]
    value = max(0.0, 1 - count / pc.incident_memory)
    assert components(raw)["incidents"] == (pytest.approx(value), f"{count} past incident(s)")
    assert raw.score == round(100 - pc.weights.of("incidents") * (1 - value))
    if count >= pc.incident_memory:
        assert raw.score == round(100 - pc.weights.of("incidents")), "never below zero incident points"


def test_incidents_are_counted_on_their_origin_table_through_twins_once_per_incident(
    config: ScanConfig, pc: ProtectConfig
) -> None:
    # one incident from two columns of the warehouse twin of fct_transactions, another still open on it
    entries = [
        incident((FCT_PG, "unit_price"), (FCT_PG, "amount"), n=1),
        incident((FCT, "amount"), state=ACTIVE, n=2),
    ]
    scores = score([closure(1, views=all_healthy())], config, pc, entries)
    assert components(scores[FCT])["incidents"][1] == "2 past incident(s)"
    assert components(scores[FCT])["incidents"][0] == pytest.approx(1 - 2 / pc.incident_memory)
    assert scores[RAW].score == scores[STG].score == scores[DEVICE].score == 100, "only the origin table pays"


def test_weights_come_from_the_protect_config(config: ScanConfig, pc: ProtectConfig) -> None:
    assert abs(sum(pc.weights.of(c) for c in COMPONENTS) - 100) < 1e-9
    custom = pc.model_copy(update={"weights": ProtectWeights(tests=60, freshness=10, owner=10, documentation=10,
                                                             incidents=10)})
    views = all_healthy()
    views[DEVICE] = replace(views[DEVICE], assertions=())
    assert score([closure(1, views=views)], config, custom)[DEVICE].score == 40


def test_least_reliable_first_ties_by_name(config: ScanConfig, pc: ProtectConfig) -> None:
    views = all_healthy()
    views[DEVICE] = replace(views[DEVICE], assertions=(), description=None)  # loses tests and documentation
    for urn in (STG, STG_PG):
        views[urn] = replace(views[urn], owners=())  # stg_orders loses its owner on both twins
    ranked = reliability([closure(1, views=views)], column_graph([closure(1, views=views)]), [], config, pc, NOW)
    assert [r.dataset for r in ranked] == [DEVICE, STG, FCT, RAW], "fct_transactions < raw.orders by name at 100"
    assert [r.score for r in ranked] == sorted(r.score for r in ranked)
    assert ranked[0].score == round(100 - pc.weights.of("tests") - pc.weights.of("documentation"))
    assert ranked[1].score == round(100 - pc.weights.of("owner"))


def test_each_dataset_lists_the_models_whose_closures_hold_it(config: ScanConfig, pc: ProtectConfig) -> None:
    only_device = {DEVICE: datasets()[DEVICE]}
    closures = [closure(1, views=all_healthy()), closure(2), other_model("churn", [("risk", DEVICE, "ip_risk_score")],
                                                                        live=True, views=only_device)]
    scores = score(closures, config, pc)
    assert scores[DEVICE].models == ("churn_1", "fraud_detector_1", "fraud_detector_2")
    assert scores[RAW].models == ("fraud_detector_1", "fraud_detector_2")
    js = scores[DEVICE].contract().as_json()
    assert js["name"] == "warehouse.marts.fct_device_features" and js["models"] == list(scores[DEVICE].models)
    assert [c["name"] for c in js["components"]] == list(COMPONENTS)


# --- gaps ---------------------------------------------------------------------------------------------------


def test_upstream_columns_reached_through_lineage_are_gaps_with_every_feature_they_feed() -> None:
    found = by_column(find_gaps([closure(1, live=True)]))
    assert set(found) == {
        (RAW, "unit_price"), (STG, "unit_price"),
        (FCT, "unit_price"), (FCT, "amount_to_price_ratio"), (FCT, "amount"),
        (DEVICE, "ip_risk_score"),
    }, "columns no feature reads (order_id, hour_of_day) are not critical"
    raw = found[(RAW, "unit_price")]
    assert raw.features == ("amount_to_price_ratio", "order_unit_price"), "one raw price column, two features"
    assert raw.models == ("fraud_detector",)
    assert len(raw.live_deployments) == 1 and not raw.past_incident
    assert found[(FCT, "unit_price")].features == ("order_unit_price",)
    assert found[(FCT, "amount_to_price_ratio")].features == ("amount_to_price_ratio",), "matched by name"


def test_gaps_rank_columns_feeding_more_features_first() -> None:
    found = find_gaps([closure(1, live=True)])
    assert [g.column for g in found[:2]] == [(RAW, "unit_price"), (STG, "unit_price")]
    assert all(len(g.features) == 1 for g in found[2:])


def test_a_column_any_twins_assertion_names_is_no_gap_but_its_upstream_still_is() -> None:
    views = datasets()
    views[FCT_PG] = replace(views[FCT_PG], assertions=(
        Assertion("urn:li:assertion:fct-price", "not_null_unit_price", "unit_price", "SUCCESS"),
    ))
    views[STG_PG] = replace(views[STG_PG], assertions=(Assertion("urn:li:assertion:stg-rows", "row_count"),))
    found = by_column(find_gaps([closure(1, views=views)]))
    assert (FCT, "unit_price") not in found, "tested on the warehouse twin of its canonical table"
    assert (RAW, "unit_price") in found and (STG, "unit_price") in found, "a table-level test names no column"
    assert (FCT, "amount_to_price_ratio") in found


def test_an_assertion_on_the_raw_column_closes_that_gap_only() -> None:
    views = datasets()
    views[RAW] = replace(views[RAW], assertions=(Assertion("urn:li:assertion:raw", "not_null", "unit_price"),))
    found = by_column(find_gaps([closure(1, views=views)]))
    assert (RAW, "unit_price") not in found
    assert (STG, "unit_price") in found and (FCT, "unit_price") in found


def test_models_live_deployments_and_features_are_counted_across_closures() -> None:
    closures = [
        closure(1, live=True),
        closure(2, live=True),  # same registered model, same deployment
        other_model("churn", [("spend", FCT_PG, "amount")], live=True),
        replace(  # deployed, but not serving traffic
            other_model("ltv", [("ltv_spend", FCT, "amount")], live=False),
            deployments=(Deployment("urn:li:mlModelDeployment:(urn:li:dataPlatform:recall,ltv-shadow,PROD)", "shadow",
                                    live=False),),
        ),
    ]
    found = find_gaps(closures)
    top = found[0]
    assert top.column == (FCT, "amount"), "three models read it: it comes first"
    assert top.models == ("churn", "fraud_detector", "ltv"), "registered names, versions collapsed"
    assert len(top.live_deployments) == 2, "fraud_detector's api once, churn's api once; ltv's shadow serves nothing"
    assert top.features == ("ltv_spend", "spend", "txn_amount")
    raw = by_column(found)[(RAW, "unit_price")]
    assert raw.models == ("fraud_detector",) and len(raw.live_deployments) == 1
    assert top.contract().as_json()["live_deployments"] == 2
    assert top.contract().as_json()["column"] == "warehouse.marts.fct_transactions.amount"


def test_live_deployments_outrank_feature_count() -> None:
    closures = [
        other_model("alpha", [("a_amount", FCT_PG, "amount")], live=True),
        other_model("beta", [("b_price", FCT_PG, "unit_price"), ("amount_to_price_ratio", FCT_PG, None)], live=False),
    ]
    order = [g.column for g in find_gaps(closures)]
    assert order.index((FCT, "amount")) < order.index((RAW, "unit_price")), "1 live deployment beats 2 features"


def test_a_gap_matching_a_past_incidents_origin_ranks_first_even_with_fewer_models() -> None:
    closures = [closure(1, live=True), other_model("churn", [("spend", FCT_PG, "amount")], live=True)]
    assert find_gaps(closures)[0].column == (FCT, "amount"), "without history the two-model column leads"
    found = find_gaps(closures, [incident((DEVICE, "ip_risk_score"))])
    assert found[0].column == (DEVICE, "ip_risk_score")
    assert found[0].past_incident and found[0].models == ("fraud_detector",)
    assert found[1].column == (FCT, "amount") and not found[1].past_incident


def test_an_incident_origin_named_by_a_twin_or_poisoned_downstream_marks_the_gap() -> None:
    closures = [closure(1, live=True)]
    by_twin = by_column(find_gaps(closures, [incident((STG_PG, "unit_price"))]))
    assert by_twin[(STG, "unit_price")].past_incident, "the origin's twin URN is canonicalised"
    assert not by_twin[(RAW, "unit_price")].past_incident
    poisoned = find_gaps(closures, [incident(
        (RAW, "unit_price"), poisoned=["warehouse.raw.orders.unit_price", "warehouse.marts.fct_transactions.unit_price"],
    )])
    flagged = [g.column for g in poisoned if g.past_incident]
    assert flagged == [(RAW, "unit_price"), (FCT, "unit_price")], "past incidents first, then the usual order"
    assert [g.column for g in poisoned[:2]] == flagged


def test_a_tested_column_stays_out_even_after_an_incident() -> None:
    views = datasets()
    views[DEVICE] = replace(views[DEVICE], assertions=(Assertion("urn:li:assertion:ip", "not_null", "ip_risk_score"),))
    found = by_column(find_gaps([closure(1, views=views)], [incident((DEVICE, "ip_risk_score"))]))
    assert (DEVICE, "ip_risk_score") not in found
    assert not any(g.past_incident for g in found.values())


def test_a_feature_whose_column_the_graph_does_not_know_opens_no_gap() -> None:
    found = find_gaps([closure(1, features=[("ghost", FCT_PG, "no_such_column"), ("risk", DEVICE, "ip_risk_score")])])
    assert [g.column for g in found] == [(DEVICE, "ip_risk_score")]


def test_no_closures_no_gaps_and_no_scores(config: ScanConfig, pc: ProtectConfig) -> None:
    assert gaps([], column_graph([]), []) == ()
    assert reliability([], column_graph([]), [], config, pc, NOW) == ()


def test_the_estate_helper_and_column_graph_agree() -> None:
    world = estate([closure(1, live=True)])
    assert gaps(world.closures, world.columns, []) == find_gaps([closure(1, live=True)])


# --- tests_yaml ---------------------------------------------------------------------------------------------


def render_yaml(found: Sequence[Gap], identities: Mapping[str, str], tests: Sequence[str]) -> str:
    """The YAML for gaps on tables whose dbt twins carry these ``dbt_unique_id`` values."""
    return _tests_yaml(found, {table: DbtNode(unique_id) for table, unique_id in identities.items()}, tests)


IDENTITIES = {
    RAW: "source.shop.raw.orders",
    STG: "model.shop.stg_orders",
    FCT: "model.shop.fct_transactions",
}


def test_tests_yaml_groups_source_and_model_columns_into_dbt_properties() -> None:
    found = find_gaps([closure(1, live=True)])
    text = render_yaml(found, IDENTITIES, ["not_null"])
    assert text.endswith("\n")
    assert yaml.safe_load(text) == {
        "version": 2,
        "sources": [
            {"name": "raw", "tables": [
                {"name": "orders", "columns": [{"name": "unit_price", "data_tests": ["not_null"]}]},
            ]},
        ],
        "models": [
            {"name": "fct_transactions", "columns": [
                {"name": "amount", "data_tests": ["not_null"]},
                {"name": "amount_to_price_ratio", "data_tests": ["not_null"]},
                {"name": "unit_price", "data_tests": ["not_null"]},
            ]},
            {"name": "stg_orders", "columns": [{"name": "unit_price", "data_tests": ["not_null"]}]},
        ],
    }, "fct_device_features has no dbt identity: left out"


def test_tests_yaml_lists_each_column_once_and_every_suggested_test() -> None:
    found = find_gaps([closure(1, live=True)])
    twice = tuple(found) + tuple(found)
    parsed = yaml.safe_load(render_yaml(twice, IDENTITIES, ["not_null", "unique"]))
    models = {m["name"]: m["columns"] for m in parsed["models"]}
    assert [c["name"] for c in models["fct_transactions"]] == ["amount", "amount_to_price_ratio", "unit_price"]
    assert all(c["data_tests"] == ["not_null", "unique"] for cols in models.values() for c in cols)
    (orders,) = parsed["sources"][0]["tables"]
    assert [c["name"] for c in orders["columns"]] == ["unit_price"]


def test_tests_yaml_puts_tables_of_one_source_under_one_entry() -> None:
    other = "urn:li:dataset:(urn:li:dataPlatform:postgres,warehouse.raw.customers,PROD)"
    found = [
        Gap((RAW, "unit_price"), ("fraud_detector",), (), ("order_unit_price",), False),
        Gap((other, "email"), ("fraud_detector",), (), ("email",), False),
        Gap((DEVICE, "ip_risk_score"), ("fraud_detector",), (), ("device_ip_risk_score",), False),
    ]
    identities = {RAW: "source.shop.raw.orders", other: "source.shop.raw.customers", DEVICE: "source.shop.risk.devices"}
    parsed = yaml.safe_load(render_yaml(found, identities, ["not_null"]))
    assert "models" not in parsed
    assert [s["name"] for s in parsed["sources"]] == ["raw", "risk"]
    assert [t["name"] for t in parsed["sources"][0]["tables"]] == ["customers", "orders"]
    assert parsed["sources"][1]["tables"] == [
        {"name": "devices", "columns": [{"name": "ip_risk_score", "data_tests": ["not_null"]}]},
    ]


def test_tests_yaml_with_only_models_has_no_sources_key() -> None:
    found = [Gap((FCT, "amount"), ("fraud_detector",), (), ("txn_amount",), False)]
    parsed = yaml.safe_load(render_yaml(found, IDENTITIES, ["not_null"]))
    assert set(parsed) == {"version", "models"}


@pytest.mark.parametrize("identities", [
    {},
    {DEVICE: "model.shop.fct_device_features"},  # a table no gap is on
    {RAW: "seed.shop.orders", FCT: "snapshot.shop.fct_transactions"},  # dbt builds it, but not as a model/source
    {RAW: "source.shop", FCT: "model.shop"},  # too short to name a table
])
def test_tests_yaml_is_empty_when_no_gap_has_a_dbt_identity(identities: dict[str, str]) -> None:
    found = [g for g in find_gaps([closure(1)]) if g.column[0] != DEVICE]
    assert render_yaml(found, identities, ["not_null"]) == ""
    assert render_yaml((), IDENTITIES, ["not_null"]) == ""



def test_tests_yaml_keeps_yaml_special_column_names_as_strings() -> None:
    names = ["no", "null", "2024", "#tag"]
    found = [Gap((FCT, n), ("m",), (), (n,), False) for n in names]
    parsed = yaml.safe_load(render_yaml(found, IDENTITIES, ["not_null"]))
    assert sorted(c["name"] for c in parsed["models"][0]["columns"]) == sorted(names)



def test_tests_yaml_names_a_versioned_model_by_its_name() -> None:
    found = [Gap((FCT, "amount"), ("m",), (), ("txn_amount",), False)]
    parsed = yaml.safe_load(render_yaml(found, {FCT: "model.shop.fct_transactions.v2"}, ["not_null"]))
    assert parsed["models"][0]["name"] == "fct_transactions"


def test_group_constant_is_the_fraud_models_group() -> None:
    """Guards the builders: a closure made with the default group reports the registered name the gaps use."""
    assert closure(1).registered_name == "fraud_detector" and closure(1).model.groups == (GROUP,)
