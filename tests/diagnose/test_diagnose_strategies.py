"""The repair catalogue for bad data: a retrain on the data before the failure proven in a copy, a rollback,
and the failing test added upstream; which comes first, and what is said when one cannot be proven."""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

import pytest

from recall_dagster.diagnose.config import DiagnoseConfig
from recall_dagster.config.load import load
from recall_dagster.diagnose.facts import Clue, Facts, RunFacts
from recall_dagster.diagnose.metric_gate import metric_gate
from recall_dagster.diagnose.hypotheses import rank
from recall_dagster.diagnose.strategies import propose_repairs
from recall_dagster.errors import ConfigError

CLEAN_UNTIL_MS = 1_764_540_000_000  # 2025-11-30T22:00:00Z: the failing test's last pass
# Scores well only when trained on rows loaded before the failing test last passed.
TRAIN = """\
import json, sys
before = sys.argv[sys.argv.index("--before") + 1] if "--before" in sys.argv else None
print("training on rows before", before)
print(json.dumps({"roc_auc": 0.95 if before == "2025-11-30T22:00:00+00:00" else 0.80}))
"""
MARTS = """\
version: 2
models:
  - name: fct_signals
    columns:
      - name: ip_risk_score
        data_tests: [{between: {arguments: {min_value: 0, max_value: 1}}}]
"""
STAGING = """\
version: 2
models:
  - name: stg_signals
    columns:
      - name: ip_risk_score
        description: As the vendor sends it.
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "dbt" / "models").mkdir(parents=True)
    (root / "train.py").write_text(TRAIN)
    (root / "dbt" / "models" / "_marts.yml").write_text(MARTS)
    (root / "dbt" / "models" / "_staging.yml").write_text(STAGING)
    return root


def configured(project: Path, dbt_project: str | None = "dbt", **repair: object) -> DiagnoseConfig:
    config = load().diagnose
    dbt = config.repair.dbt.model_copy(update={"project": dbt_project})
    defaults = {"project": str(project), "allowed": ["dbt/models/*.yml"], "dbt": dbt,
                "retrain": ["{python}", "train.py", "{model}", "--before", "{before}"]}
    return config.model_copy(update={"repair": config.repair.model_copy(update={**defaults, **repair})})


def facts() -> Facts:
    base = RunFacts("1", "r1", 1_000, 2_000, {"roc_auc": 0.95}, features=("ip_risk", "amount"))
    cand = RunFacts("2", "r2", CLEAN_UNTIL_MS + 60_000, CLEAN_UNTIL_MS + 90_000, {"roc_auc": 0.80},
                    features=("ip_risk", "amount"))
    failing = Clue(
        "assertion_failed", "fct_signals.ip_risk_score", "between on fct_signals.ip_risk_score failed (900 rows)",
        "feature", at_ms=CLEAN_UNTIL_MS + 30_000, fields=("ip_risk",),
        data={"dataset": "urn:li:dataset:(urn:li:dataPlatform:dbt,shop.fct_signals,PROD)", "column": "ip_risk_score",
              "kind": "between_fct_signals_ip_risk_score__1__0", "failed_rows": 900, "clean_until_ms": CLEAN_UNTIL_MS,
              "dbt_node": "model.shop.fct_signals",
              "guard_upstream": [{"node": "model.shop.stg_signals", "column": "ip_risk_score"}]},
    )
    window = Clue("contaminated", "fraud", "trained inside the failing window", "feature", fields=("ip_risk",),
                  data={"rollback": "1", "rollback_note": "version 1 trained before the failure began"})
    return Facts("fraud", cand, base, (failing, window), 2)


def repairs(config: DiagnoseConfig) -> list[dict]:
    f = facts()
    gate = metric_gate(f.candidate.metrics, f.baseline.metrics, config)
    ranked = rank(f, gate.loss, config.hypotheses)
    assert ranked[0].kind == "upstream_data_quality"
    found = propose_repairs(f, ranked, config, gate.primary, lambda v: {"roc_auc": 0.95} if v == "1" else {})
    return [r.contract().as_json() for r in found]


def digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in root.rglob("*") if p.is_file()}


def test_a_retrain_on_the_data_before_the_failure_is_proven_and_comes_first(project: Path) -> None:
    before = digest(project)
    first, rollback, guard = repairs(configured(project))
    assert digest(project) == before, "every repair is made and proven in a copy"

    assert (first["strategy"], first["validated"]) == ("retrain_before_failure", True), first["reason"]
    assert "2025-11-30T22:00:00+00:00" in first["description"] and first["patch"] is None
    assert (first["metric_before"], first["metric_after"]) == (0.80, 0.95)
    assert "training on rows before 2025-11-30T22:00:00+00:00" in first["tried"][0]["output"]

    assert (rollback["strategy"], rollback["validated"], rollback["metric_after"]) == ("rollback", True, 0.95)
    assert "version 1 trained before the failure began" in rollback["reason"]

    assert (guard["strategy"], guard["validated"]) == ("add_dbt_test", False)
    assert "proposed, not proven" in guard["reason"] and "diagnose.repair.dbt.command" in guard["reason"]
    assert "+        data_tests: [{between: {arguments: {min_value: 0, max_value: 1}}}]" in guard["patch"]


def test_a_retrain_that_wins_back_too_little_yields_to_the_rollback(project: Path) -> None:
    (project / "train.py").write_text(TRAIN.replace("0.95 if", "0.90 if"))
    first, retrain, _ = repairs(configured(project))
    assert first["strategy"] == "rollback" and first["validated"]
    assert (retrain["strategy"], retrain["validated"], retrain["metric_after"]) == ("retrain_before_failure", False, 0.90)
    assert "did not win the regression back: roc_auc 0.8 -> 0.9 (67% of its drop won back)" in retrain["reason"]

    (project / "train.py").write_text(TRAIN.replace("0.95 if", "0.93 if"))
    first, *_ = repairs(configured(project))
    assert (first["strategy"], first["validated"]) == ("retrain_before_failure", True), "87% won back: enough"
    assert "roc_auc 0.8 -> 0.93 (87% of its drop won back)" in first["reason"]
    strict = configured(project, min_recovery=1.0)
    assert repairs(strict)[0]["strategy"] == "rollback", "a team that wants it all back gets a rollback"


def test_unconfigured_repairs_are_proposed_not_proven_and_say_which_key_to_set(project: Path) -> None:
    first, retrain = repairs(configured(project, retrain=[], dbt_project=None))
    assert first["strategy"] == "rollback", "the only proven option leads"
    assert not retrain["validated"] and "diagnose.repair.retrain" in retrain["reason"]


def test_a_dbt_edit_outside_the_allowed_files_is_refused(project: Path) -> None:
    *_, guard = repairs(configured(project, allowed=("ml_models/*.py",)))
    assert guard["strategy"] == "add_dbt_test" and not guard["validated"] and guard["patch"] is None
    assert "matches none of diagnose.repair.allowed" in guard["reason"]


@pytest.mark.parametrize("value", [0, 1.5])
def test_a_recovery_share_outside_0_to_1_is_refused_naming_the_key(tmp_path: Path, value: float) -> None:
    overlay = tmp_path / "recall.yaml"
    overlay.write_text(f"diagnose:\n  repair:\n    min_recovery: {value}\n")
    with pytest.raises(ConfigError, match=r"`diagnose\.repair\.min_recovery` must be a finite number in \(0, 1\]"):
        load(overlay).diagnose


def test_a_repair_that_wins_the_drop_back_by_costing_another_metric_is_not_proven(project: Path) -> None:
    (project / "train.py").write_text(TRAIN.replace(
        'print(json.dumps({"roc_auc": 0.95 if', 'print(json.dumps({"average_precision": 0.2, "roc_auc": 0.95 if'))
    config = configured(project)
    f = facts()
    f = dataclasses.replace(
        f, candidate=dataclasses.replace(f.candidate, metrics={"roc_auc": 0.80, "average_precision": 0.6}),
        baseline=dataclasses.replace(f.baseline, metrics={"roc_auc": 0.95, "average_precision": 0.6}),
    )
    gate = metric_gate(f.candidate.metrics, f.baseline.metrics, config)
    found = propose_repairs(f, rank(f, gate.loss, config.hypotheses), config, gate.primary, lambda v: {})
    retrain = next(r for r in found if r.strategy == "retrain_before_failure")
    assert not retrain.validated
    assert "average_precision 0.6 -> 0.2 (worse than the candidate beyond its tolerance)" in retrain.reason
