"""The missing dbt test: found where the team declares it, added upstream byte-exactly, its run read back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from recall_dagster.diagnose.dbt_tests import add_test, column_tests, properties_file, dbt_test_outcome, upstream_test_edit
from recall_dagster.diagnose.repair import RepairRefused
from recall_dagster.estate.dbt import DbtNode

STAGING = """\
version: 2

models:
  - name: stg_signals   # the vendor feed, as delivered
    description: Device signals.
    columns:
      - name: transaction_id
        data_tests: [unique, not_null]
      - name: ip_risk_score
        description: Vendor score in [0, 1].

  - name: stg_orders
    columns:
      - name: unit_price
        data_tests:
          - not_null
          - accepted_values:
              arguments:
                values: [1, 2]
"""
MARTS = """\
version: 2
models:
  - name: fct_signals
    columns:
      - name: ip_risk_score
        data_tests: [{between: {arguments: {min_value: 0, max_value: 1}}}]
"""
SOURCES = """\
version: 2
sources:
  - name: raw
    tables:
      - name: signals
        columns:
          - name: ip_risk_score
            description: As the vendor sends it.
"""
BETWEEN = {"between": {"arguments": {"min_value": 0, "max_value": 1}}}
STG, FCT = DbtNode("model.shop.stg_signals"), DbtNode("model.shop.fct_signals")
ORDERS, RAW = DbtNode("model.shop.stg_orders"), DbtNode("source.shop.raw.signals")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    models = tmp_path / "warehouse" / "models"
    (models / "staging").mkdir(parents=True)
    (models / "marts").mkdir()
    (models / "staging" / "_staging.yml").write_text(STAGING)
    (models / "staging" / "_sources.yml").write_text(SOURCES)
    (models / "marts" / "_marts.yml").write_text(MARTS)
    (tmp_path / "warehouse" / "target").mkdir()
    (tmp_path / "warehouse" / "target" / "stale.yml").write_text(MARTS.replace("fct_signals", "stg_signals"))
    return tmp_path


def changed(before: str, after: str) -> list[str]:
    """The lines an edit added, given it removed none."""
    old = before.splitlines()
    new = after.splitlines()
    assert all(line in new for line in old), "nothing the team wrote is lost or reformatted"
    return [line for line in new if line not in old or new.count(line) > old.count(line)]


def test_a_new_key_goes_under_the_column_at_its_indentation() -> None:
    after = add_test(STAGING, STG, "ip_risk_score", BETWEEN, "_staging.yml")
    assert changed(STAGING, after) == ["        data_tests: [{between: {arguments: {min_value: 0, max_value: 1}}}]"]
    assert column_tests(after, STG, "ip_risk_score") == [BETWEEN]


def test_a_flow_list_grows_in_place_and_a_block_list_by_one_item() -> None:
    flow = add_test(STAGING, STG, "transaction_id", "accepted_values", "_staging.yml")
    assert flow == STAGING.replace("[unique, not_null]", "[unique, not_null, accepted_values]")
    block = add_test(STAGING, ORDERS, "unit_price", BETWEEN, "_staging.yml")
    assert changed(STAGING, block) == ["          - {between: {arguments: {min_value: 0, max_value: 1}}}"]
    assert column_tests(block, ORDERS, "unit_price")[-1] == BETWEEN


def test_an_undeclared_column_is_declared_with_the_test_and_sources_are_found_by_table() -> None:
    after = add_test(STAGING, STG, "session_seconds", "not_null", "_staging.yml")
    assert changed(STAGING, after) == ["      - name: session_seconds", "        data_tests: [not_null]"]
    source = add_test(SOURCES, RAW, "ip_risk_score", "not_null", "_sources.yml")
    assert changed(SOURCES, source) == ["            data_tests: [not_null]"]
    assert yaml.safe_load(source)["sources"][0]["tables"][0]["columns"][0]["data_tests"] == ["not_null"]


def test_a_resource_the_file_does_not_declare_is_refused() -> None:
    with pytest.raises(RepairRefused, match="does not declare model.shop.dim_customers"):
        add_test(STAGING, DbtNode("model.shop.dim_customers"), "id", "not_null", "_staging.yml")


def test_the_declaring_file_is_found_and_build_output_is_not_searched(project: Path) -> None:
    path, text = properties_file(project / "warehouse", STG)
    assert path.name == "_staging.yml" and "stg_signals" in text
    assert properties_file(project / "warehouse", RAW)[0].name == "_sources.yml"
    with pytest.raises(RepairRefused, match="no YAML file under .* declares model.shop.nowhere"):
        properties_file(project / "warehouse", DbtNode("model.shop.nowhere"))


def test_the_failing_test_is_copied_upstream_with_its_arguments(project: Path) -> None:
    edit, name = upstream_test_edit(project, "warehouse", FCT, "ip_risk_score",
                                    "between_fct_signals_ip_risk_score__1__0", STG, "ip_risk_score")
    assert name == "between", "the failing node's generic test, named as dbt names its nodes"
    assert edit.path == "warehouse/models/staging/_staging.yml" and edit.changed_lines == 1
    assert "+        data_tests: [{between: {arguments: {min_value: 0, max_value: 1}}}]" in edit.patch
    assert edit.before == STAGING, "the edit is proposed, not written"
    assert (project / edit.path).read_text() == STAGING

    with pytest.raises(RepairRefused, match="no test on fct_signals.ip_risk_score that unique_fct_signals_ip_risk"):
        upstream_test_edit(project, "warehouse", FCT, "ip_risk_score", "unique_fct_signals_ip_risk_score", STG,
                           "ip_risk_score")
    with pytest.raises(RepairRefused, match="already declares a not_null test on stg_orders.unit_price"):
        upstream_test_edit(project, "warehouse", ORDERS, "unit_price", "not_null_stg_orders_unit_price", ORDERS,
                           "unit_price")
    with pytest.raises(RepairRefused, match="'dbt' is not a directory"):
        upstream_test_edit(project, "dbt", FCT, "ip_risk_score", "between", STG, "ip_risk_score")


def test_the_longest_generic_name_wins_and_source_tests_are_recognised(project: Path) -> None:
    orders = project / "warehouse" / "models" / "staging" / "_staging.yml"
    orders.write_text(STAGING.replace("          - not_null\n", "          - not_null\n          - not_null_share\n"))
    edit, name = upstream_test_edit(project, "warehouse", ORDERS, "unit_price", "not_null_share_stg_orders_unit_price",
                                    STG, "ip_risk_score")
    assert name == "not_null_share" and "data_tests: [not_null_share]" in edit.after
    _, name = upstream_test_edit(project, "warehouse", ORDERS, "unit_price", "source_not_null_raw_orders_unit_price",
                                 STG, "ip_risk_score")
    assert name == "not_null"


def test_the_added_tests_outcome_is_read_from_dbts_own_artifacts(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.mkdir()
    assert dbt_test_outcome(tmp_path, STG, "ip_risk_score", "between") is None, "no run: nothing to read"

    def test_node(name: str, column: str, on: str) -> dict:
        return {"resource_type": "test", "column_name": column, "test_metadata": {"name": name},
                "depends_on": {"nodes": [on, "macro.shop.test_between"]}}

    (target / "manifest.json").write_text(json.dumps({"nodes": {
        "test.shop.between_stg_signals_ip_risk_score.1": test_node("between", "ip_risk_score", STG.unique_id),
        "test.shop.not_null_stg_signals_ip_risk_score.2": test_node("not_null", "ip_risk_score", STG.unique_id),
        "test.shop.between_fct_signals_ip_risk_score.3": test_node("between", "ip_risk_score", FCT.unique_id),
        "model.shop.stg_signals": {"resource_type": "model"},
    }}))
    (target / "run_results.json").write_text(json.dumps({"results": [
        {"unique_id": "test.shop.between_stg_signals_ip_risk_score.1", "status": "fail", "failures": 42},
        {"unique_id": "test.shop.not_null_stg_signals_ip_risk_score.2", "status": "pass", "failures": 0},
        {"unique_id": "test.shop.between_fct_signals_ip_risk_score.3", "status": "fail", "failures": 7},
    ]}))
    assert dbt_test_outcome(tmp_path, STG, "ip_risk_score", "between") == {
        "pass": 0.0, "fail": 1.0, "error": 0.0, "failing_rows": 42.0
    }
    assert dbt_test_outcome(tmp_path, STG, "ip_risk_score", "not_null")["pass"] == 1.0
    assert dbt_test_outcome(tmp_path, STG, "session_seconds", "between") is None
