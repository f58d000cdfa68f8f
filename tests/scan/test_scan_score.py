"""score = min(100, sum(weights) * (1 + 0.15 * live deployments)), tiers from recall.yaml."""

from __future__ import annotations

from recall_dagster.detect import Finding, Severity
from recall_dagster.score import score_model


def findings(*severities: Severity) -> list[Finding]:
    return [Finding("d", s, f"urn:{i}", "m") for i, s in enumerate(severities)]


def test_formula_tiers_and_cap(config):
    s = config.scoring
    zero, one = score_model([], 3, s), score_model(findings(Severity.INFO), 0, s)
    assert (zero.value, zero.tier) == (0, "HEALTHY")
    assert (one.value, one.tier) == (1, "WATCH")
    assert score_model(findings(Severity.WARN), 1, s).value == 12  # 11.5 rounds half up
    assert score_model(findings(Severity.CRITICAL), 0, s).tier == "AT_RISK"  # 30
    assert score_model(findings(Severity.CRITICAL, Severity.CRITICAL), 0, s).tier == "CRITICAL"  # 60
    assert score_model(findings(Severity.CRITICAL, Severity.WARN), 2, s).value == 52  # 40 * 1.3
    assert score_model(findings(*[Severity.CRITICAL] * 5), 4, s).value == 100


def test_fail_tier_ordering(config):
    s = config.scoring
    assert s.at_or_above("CRITICAL", "CRITICAL")
    assert not s.at_or_above("AT_RISK", "CRITICAL")
    assert s.at_or_above("CRITICAL", "WATCH") and not s.at_or_above("HEALTHY", "WATCH")
