"""Every form of a model's name is read in one place and means the same versions wherever it is given; a name
two registered models answer to is refused, never the two read as one."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scan_closures import closure, ds, feature, urn

from recall_dagster.acks.model import Acknowledgement
from recall_dagster.detect.finding import Finding, Severity
from recall_dagster.errors import ConfigError
from recall_dagster.estate import Model, ModelClosure
from recall_dagster.estate.naming import model_name
from recall_dagster.estate.select import select, version_retrain_replaces
from recall_dagster.lifecycle.records import AssertionRecord


def version(platform: str, name: str, number: int, production: bool = False) -> ModelClosure:
    group = f"urn:li:mlModelGroup:(urn:li:dataPlatform:{platform},{name},PROD)"
    model = Model(urn=f"urn:li:mlModel:(urn:li:dataPlatform:{platform},{name}_{number},PROD)", name=f"{name}_{number}",
                  version=str(number), groups=(group,), registry_production=production)
    return ModelClosure(model=model, production=production)


def test_each_form_is_read_once() -> None:
    assert model_name("fraud_detector/3").one_version and model_name("fraud_detector/3").registered == "fraud_detector"
    group = model_name("urn:li:mlModelGroup:(urn:li:dataPlatform:mlflow,churn,PROD)")
    assert not group.one_version and group.registered == "churn"
    urn = model_name("urn:li:mlModel:(urn:li:dataPlatform:mlflow,churn_2,PROD)")
    assert urn.one_version and urn.registered is None, "a version's URN says no registry name by itself"
    assert not model_name("churn").one_version


def test_a_name_two_registered_models_answer_to_is_refused_with_both() -> None:
    pool = [version("mlflow", "churn", 1), version("sagemaker", "churn", 1)]
    with pytest.raises(ConfigError, match="names several registered models .*mlflow.*sagemaker"):
        select(pool, ["churn"])
    assert select(pool, ["urn:li:mlModelGroup:(urn:li:dataPlatform:sagemaker,churn,PROD)"]) == [pool[1]]


def test_an_acknowledgement_for_a_version_s_own_name_covers_that_version_only() -> None:
    v1, v2 = version("mlflow", "churn", 1), version("mlflow", "churn", 2)
    ack = Acknowledgement.make("ownership_vacuum", v2.urn, "churn_2", ["fp"], "why", "ana", 0, 1)
    assert ack._for(v2) and not ack._for(v1)


NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True)


@settings(max_examples=60, deadline=None)
@given(models=st.dictionaries(NAMES, st.integers(min_value=1, max_value=4), min_size=1, max_size=4),
       platforms=st.lists(st.sampled_from(["mlflow", "sagemaker", "vertexai"]), min_size=1, max_size=2, unique=True))
def test_every_form_of_a_name_picks_the_same_versions(models: dict[str, int], platforms: list[str]) -> None:
    pool = [version(p, name, n, production=n == count) for p in platforms for name, count in models.items()
            for n in range(1, count + 1)]
    groups = {c.registered_model for c in pool}
    for group in groups:
        members = [c for c in pool if c.registered_model == group]
        assert select(pool, [group]) == members, "a group's URN is every version of it"
        replaced = version_retrain_replaces(pool, group)
        assert replaced is not None and replaced.registered_model == group and replaced.production
        for member in members:
            forms = [member.urn, f"{member.registered_name}/{member.model.version}"]
            for form in forms:
                if len({c.registered_model for c in pool if model_name(form).names_version(c)}) == 1:
                    assert select(pool, [form]) == [member] == select(pool, versions=[form])
                    assert version_retrain_replaces(pool, form) == member
                    ack = Acknowledgement.make("d", member.urn, form, ["fp"], "why", "ana", 0, 1)
                    assert [c for c in pool if ack._for(c)] == [member], "an ack on a version covers it alone"
                else:  # name/version on two platforms
                    with pytest.raises(ConfigError, match="names several registered models"):
                        select(pool, versions=[form])
        name = members[0].registered_name
        clashing = {c.registered_model for c in pool if c.registered_name == name or c.model.name == name}
        if len(clashing) == 1:
            assert select(pool, [name]) == members, "a registered name is every version of it"
        else:
            with pytest.raises(ConfigError, match="names several registered models"):
                select(pool, [name])


def test_a_finding_is_about_any_name_of_its_table() -> None:
    mart = ds("marts.orders", aliases=("model.shop.orders",))
    c = closure(features=[feature("f", "marts.orders")], datasets=[mart])
    found = Finding("upstream_staleness", Severity.WARN, urn("marts.orders"), "stale", cause=urn("marts.orders"))
    for name in (urn("marts.orders"), "postgres:db.marts.orders", "db.marts.orders", "marts.orders", "ORDERS",
                 "model.shop.orders"):
        assert found.about(c, name), name
    assert not found.about(c, "sqlite:db.marts.orders") and not found.about(c, "customers")


def test_an_assertion_answers_to_its_names_without_case() -> None:
    record = AssertionRecord(urn="urn:li:assertion:x", name="not_null_orders_amount", dataset="d", column="amount",
                             kind=None, runs=(), writes_ms=(), aliases=("test.shop.not_null_orders_amount.1a",))
    assert record.named("NOT_NULL_orders_amount") and record.named("test.shop.NOT_NULL_orders_amount.1a")
    assert record.named("urn:li:assertion:x") and not record.named("not_null_orders")
