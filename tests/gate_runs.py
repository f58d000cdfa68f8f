"""How a run the retrain gate refused reads in Dagster, asserted once for every estate's tests."""

from __future__ import annotations

from typing import Any

from dagster import AssetKey, ExecuteInProcessResult


def withheld(result: ExecuteInProcessResult, gate: AssetKey) -> tuple[str, dict[str, Any]]:
    """A refusal in a run that holds the gate, as an operator reads it: the run succeeds, the gate is not
    materialized, the training step and its checks are skipped (none failed), and the gate's check fails with
    the reason in one line (its description) before the detail (its metadata)."""
    assert result.success, result.get_step_failure_events()
    assert gate not in {e.asset_key for e in result.get_asset_materialization_events()}
    assert not result.get_step_failure_events()
    assert any(e.is_step_skipped for e in result.all_events), "the retrain behind the gate is skipped"
    [check] = [c for c in result.get_asset_check_evaluations() if c.asset_check_key.name == "retrain_gate"]
    assert not check.passed and check.severity.value == "ERROR"
    return check.description or "", {k: v.value for k, v in check.metadata.items()}
