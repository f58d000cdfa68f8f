"""Which verdicts let a retrain run, and what an override of a refusal must name."""

from __future__ import annotations

import pytest

from recall_dagster.errors import ConfigError
from recall_dagster.lifecycle.override import OVERRIDE_BY_TAG, OVERRIDE_REASON_TAG, GateOverride, decide

ANA = GateOverride("ana", "known noise")


@pytest.mark.parametrize(("verdict", "block_unverified", "allowed"), [
    ("GO", True, True), ("UNVERIFIED", False, True), ("UNVERIFIED", True, False), ("NO-GO", False, False),
])
def test_a_verdict_decides_alone_without_an_override(verdict: str, block_unverified: bool, allowed: bool) -> None:
    decision = decide(verdict, block_unverified, None)
    assert (decision.allowed, decision.override) == (allowed, None)


def test_an_override_is_used_only_where_the_gate_refuses() -> None:
    assert decide("GO", True, ANA).override is None, "a GO retrain is not marked as overridden"
    refused = decide("NO-GO", True, ANA)
    assert refused.allowed and refused.override == GateOverride("ana", "known noise", "NO-GO")
    assert refused.override.describe() == "trained past a NO-GO gate verdict by ana: known noise"


def test_an_override_names_who_and_why_or_is_refused() -> None:
    assert GateOverride.from_tags({}) is None
    assert GateOverride.from_tags({OVERRIDE_BY_TAG: " ana ", OVERRIDE_REASON_TAG: "noise"}) == GateOverride("ana", "noise")
    with pytest.raises(ConfigError, match=f"this run has no {OVERRIDE_REASON_TAG} tag"):
        GateOverride.from_tags({OVERRIDE_BY_TAG: "ana", OVERRIDE_REASON_TAG: "  "})
    with pytest.raises(ConfigError, match=f"this run has no {OVERRIDE_BY_TAG} tag"):
        GateOverride.from_tags({OVERRIDE_REASON_TAG: "noise"})


def test_a_version_s_tags_give_the_override_back() -> None:
    used = decide("NO-GO", True, ANA).override
    assert used is not None and GateOverride.from_version(used.version_tags("run-1")) == used
    assert GateOverride.from_version({"owner": "ana"}) is None
