"""The verdict's edges against the shipped thresholds, and the impact section's validation."""

from __future__ import annotations

import copy

import pytest

from recall_dagster.errors import ConfigError
from recall_dagster.config.load import load, load_yaml_config
from tests.configured import with_section
from recall_dagster.impact.measure import Measurement
from recall_dagster.impact.policy import Verdict, judge, worst


@pytest.fixture(scope="module")
def config():
    return load().impact


def measured(
    loss: float | None = 0.0,
    significant: bool = False,
    flip_rate: float = 0.0,
    failures: int = 0,
    rows: int = 1000,
) -> Measurement:
    if loss is None:
        baseline = mutated = delta = None
        ci = None
    else:
        baseline = 0.9
        delta = -loss * (baseline - 0.5)
        mutated = baseline + delta
        ci = (delta - 0.01, delta - 0.001) if significant else (delta - 0.01, 0.01)
    return Measurement(
        metric="roc_auc",
        baseline=baseline,
        mutated=mutated,
        delta=delta,
        ci=ci,
        loss=loss,
        significant=significant,
        flip_rate=flip_rate,
        mean_abs_shift=0.0,
        failures=failures,
        rows=rows,
    )


def test_shipped_thresholds_are_what_the_edges_below_assume(config):
    assert config.policy.warn.metric_loss < config.policy.block.metric_loss
    assert config.policy.warn.flip_rate < config.policy.block.flip_rate
    assert config.policy.block.failure_rate == 0.0
    assert "failure_rate" not in type(config.policy.warn).model_fields, "only the block line counts failed rows"


# --- failures -----------------------------------------------------------------------------------


def test_one_failed_row_blocks_at_the_shipped_failure_rate(config):
    verdict = judge(measured(loss=0.0, failures=1, rows=999), config)
    assert verdict.verdict is Verdict.BLOCK
    assert "1 of 1,000 rows failed inference" in verdict.reason


def test_failures_block_before_anything_else(config):
    # even with no metric at all, failing rows block rather than leave the verdict INCOMPLETE
    assert judge(measured(loss=None, failures=10, rows=0), config).verdict is Verdict.BLOCK


def test_failures_at_a_failure_rate_line_do_not_block_above_it_do(config):
    block = config.policy.block.model_copy(update={"failure_rate": 0.1})
    lenient = config.model_copy(update={"policy": config.policy.model_copy(update={"block": block})})
    assert judge(measured(failures=10, rows=90), lenient).verdict is Verdict.PASS  # 10% exactly
    assert judge(measured(failures=11, rows=89), lenient).verdict is Verdict.BLOCK  # 11%


# --- metric loss --------------------------------------------------------------------------------


def test_a_significant_loss_at_the_block_line_blocks(config):
    verdict = judge(measured(loss=config.policy.block.metric_loss, significant=True), config)
    assert verdict.verdict is Verdict.BLOCK
    assert "significant" in verdict.reason and "5.0% of its skill lost" in verdict.reason


def test_the_same_loss_not_significant_warns(config):
    verdict = judge(measured(loss=config.policy.block.metric_loss, significant=False), config)
    assert verdict.verdict is Verdict.WARN
    assert "not significant" in verdict.reason


def test_a_significant_loss_just_under_the_block_line_warns(config):
    assert judge(measured(loss=config.policy.block.metric_loss - 1e-9, significant=True), config).verdict is Verdict.WARN


def test_a_loss_at_the_warn_line_warns_and_just_under_passes(config):
    assert judge(measured(loss=config.policy.warn.metric_loss), config).verdict is Verdict.WARN
    assert judge(measured(loss=config.policy.warn.metric_loss - 1e-9), config).verdict is Verdict.PASS


def test_a_gain_passes_and_says_no_loss(config):
    verdict = judge(measured(loss=-0.2), config)
    assert verdict.verdict is Verdict.PASS
    assert "no loss" in verdict.reason


def test_no_loss_is_incomplete(config):
    verdict = judge(measured(loss=None, rows=42), config)
    assert verdict.verdict is Verdict.INCOMPLETE
    assert "42" in verdict.reason


# --- flips --------------------------------------------------------------------------------------


def test_flips_at_the_block_line_block_even_without_loss(config):
    verdict = judge(measured(loss=0.0, flip_rate=config.policy.block.flip_rate), config)
    assert verdict.verdict is Verdict.BLOCK
    assert "5.0% of predictions flip" in verdict.reason


def test_flips_block_a_loss_that_is_not_significant(config):
    m = measured(loss=config.policy.block.metric_loss, significant=False, flip_rate=config.policy.block.flip_rate)
    assert judge(m, config).verdict is Verdict.BLOCK


def test_flips_at_the_warn_line_warn_and_just_under_pass(config):
    assert judge(measured(flip_rate=config.policy.warn.flip_rate), config).verdict is Verdict.WARN
    assert judge(measured(flip_rate=config.policy.warn.flip_rate - 1e-9), config).verdict is Verdict.PASS
    assert judge(measured(flip_rate=config.policy.block.flip_rate - 1e-9), config).verdict is Verdict.WARN


# --- worst --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "verdicts, expected",
    [
        ([Verdict.PASS, Verdict.WARN, Verdict.INCOMPLETE, Verdict.BLOCK], Verdict.BLOCK),
        ([Verdict.BLOCK, Verdict.PASS], Verdict.BLOCK),
        ([Verdict.WARN, Verdict.INCOMPLETE, Verdict.PASS], Verdict.INCOMPLETE),
        ([Verdict.PASS, Verdict.WARN], Verdict.WARN),
        ([Verdict.PASS, Verdict.PASS], Verdict.PASS),
        ([Verdict.INCOMPLETE], Verdict.INCOMPLETE),
        ([], Verdict.PASS),
    ],
)
def test_worst_orders_block_incomplete_warn_pass(verdicts, expected):
    assert worst(verdicts) is expected


def test_rank_orders_the_verdicts():
    assert [v.rank for v in (Verdict.BLOCK, Verdict.INCOMPLETE, Verdict.WARN, Verdict.PASS)] == [0, 1, 2, 3]


# --- config validation --------------------------------------------------------------------------


def shipped() -> dict:
    return copy.deepcopy(load_yaml_config()[0]["impact"])


def test_the_shipped_section_parses_to_its_values(config):
    assert config.seed == 7 and config.bootstrap == 200 and config.confidence == 0.95
    assert config.batch_rows == 5000 and config.flip_tolerance == 0.1
    assert config.evaluation.label_column == "label"
    assert dict(config.measured.schema_drift) == {
        "retyped": "type_coercion",
        "retyped_time": "timezone_shift:1",
        "removed": "drop",
    }


def test_warn_above_block_names_impact_policy():
    data = shipped()
    data["policy"]["warn"]["metric_loss"] = data["policy"]["block"]["metric_loss"] + 0.01
    with pytest.raises(ConfigError, match=r"impact\.policy"):
        with_section("impact", data)
    data = shipped()
    data["policy"]["warn"]["flip_rate"] = data["policy"]["block"]["flip_rate"] + 0.01
    with pytest.raises(ConfigError, match=r"`impact\.policy\.warn` must not be above impact\.policy\.block"):
        with_section("impact", data)


def test_warn_equal_to_block_is_allowed():
    data = shipped()
    data["policy"]["warn"] = dict(data["policy"]["block"])
    del data["policy"]["warn"]["failure_rate"]
    policy = with_section("impact", data).policy
    assert policy.warn.metric_loss == policy.block.metric_loss


def test_an_unknown_mutation_in_schema_drift_is_a_config_error():
    data = shipped()
    data["measured"]["schema_drift"]["retyped"] = "explode"
    with pytest.raises(ConfigError, match="unknown mutation 'explode'"):
        with_section("impact", data)


def test_an_unknown_mutation_in_schema_drift_names_its_file_and_key():
    data = shipped()
    data["measured"]["schema_drift"]["retyped"] = "explode"
    with pytest.raises(ConfigError, match=r"mine\.yaml: `impact\.measured\.schema_drift\.retyped`: unknown mutation"):
        with_section("impact", data)


def test_an_unknown_schema_drift_key_is_a_config_error_naming_the_known_ones():
    data = shipped()
    data["measured"]["schema_drift"]["renamed"] = "drop"
    with pytest.raises(ConfigError) as err:
        with_section("impact", data)
    message = str(err.value)
    assert "impact.measured.schema_drift.renamed" in message
    assert "retyped, retyped_time, removed" in message


def test_an_unknown_mutation_in_failing_assertion_is_a_config_error():
    data = shipped()
    data["measured"]["failing_assertion"]["validity"] = "category_remapp"
    with pytest.raises(ConfigError, match="unknown mutation"):
        with_section("impact", data)


@pytest.mark.parametrize("confidence", [0, 1, 1.5])
def test_confidence_must_be_strictly_between_zero_and_one(confidence):
    data = shipped()
    data["confidence"] = confidence
    with pytest.raises(ConfigError, match=r"impact\.confidence"):
        with_section("impact", data)


def test_a_flip_rate_above_one_is_a_config_error():
    data = shipped()
    data["policy"]["block"]["flip_rate"] = 1.5
    with pytest.raises(ConfigError, match=r"impact\.policy\.block"):
        with_section("impact", data)


def test_an_overlay_file_changes_only_what_it_names(tmp_path):
    overlay = tmp_path / "mine.yaml"
    overlay.write_text("impact:\n  policy:\n    block: {metric_loss: 0.2}\n")
    loaded = load(overlay)
    config = loaded.impact
    assert config.policy.block.metric_loss == 0.2
    assert config.policy.block.flip_rate == 0.05 and config.policy.warn.metric_loss == 0.01
    assert loaded.source == str(overlay)
