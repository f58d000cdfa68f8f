"""Recall's verdict on the model's own asset: the model turns red in the lineage the team already watches.

:func:`~recall_dagster.defs.retrain_gate.retrain_gate` puts a ``recall_verdict`` check
on the training asset it gates (the asset the team names for the model), as
dagster-dbt puts a dbt test on its model. Its status is the production
version's tier against ``scoring.fail_tier`` (failed at the fail tier, a
warning at any tier between it and the healthy tier, passed there) and its
description the one line an operator reads in the table: the version (the
worst when several serve), tier, score, top reason, next step.

Every scan reports it without running the team's training: ``risk_scores``
records an evaluation of each such check in the code location, runless, from
the scores it just made (:func:`report_verdicts`); a run launched by the
webserver or the daemon knows its code location, while ``execute_in_process``
knows only its own job and so records none. A run that materializes the
training asset executes the check too, and judges the production version there
and then, as ``recall scan --model`` does, reading the scans' schema baselines
without recording any.
"""


from dataclasses import dataclass
from typing import Any, Sequence

from dagster import (
    AssetCheckEvaluation,
    AssetCheckKey,
    AssetCheckResult,
    AssetCheckSeverity,
    AssetChecksDefinition,
    AssetKey,
    DagsterInstance,
    MetadataValue,
    asset_check,
)

from recall_dagster.clock import clock_ms
from recall_dagster.defs._compat import check_metadata
from recall_dagster.defs.resources import RecallResource
from recall_dagster.defs.translator import RecallTranslator
from recall_dagster.detect.config import ScoringConfig
from recall_dagster.errors import RecallError
from recall_dagster.estate.select import select
from recall_dagster.home_scan import home_pipeline
from recall_dagster.instants import iso_instant
from recall_dagster.narrate import headline
from recall_dagster.results import ModelReport, ScanResult

VERDICT_CHECK = "recall_verdict"
MODEL_KEY = "recall/registered_model"  # the check's own metadata: which registered model it judges


@dataclass(frozen=True)
class Verdict:
    """One model's check result, as the scan and a run that trains it both state it."""

    passed: bool
    severity: AssetCheckSeverity
    description: str
    metadata: dict[str, Any]


def verdict_of(model: str, reports: Sequence[ModelReport], scoring: ScoringConfig,
               scanned_at_ms: int) -> Verdict | None:
    """The verdict on the registered ``model`` from the scored ``reports``: its production version's (the
    worst when several serve); None when none of them was scanned."""
    chosen = {c.urn for c in select([r.closure for r in reports], [model]) if c.production}
    served = [r for r in reports if r.closure.urn in chosen]
    if not served:
        return None
    at = iso_instant(scanned_at_ms)
    worst = max(served, key=lambda r: r.score.value)
    tier, score = worst.score.tier, worst.score.value
    failing = scoring.at_or_above(tier, scoring.fail_tier)
    line = f"{worst.closure.model.name} {headline(tier, score, worst.findings)}"
    return Verdict(
        passed=tier == scoring.healthy_tier,
        severity=AssetCheckSeverity.ERROR if failing else AssetCheckSeverity.WARN,
        description=line,
        metadata={"verdict": line, "tier": tier, "score": score, "version": worst.closure.model.name,
                  "findings": len(worst.findings), "scanned_at": at},
    )


def verdict_check(training: AssetKey, model: str, translator: RecallTranslator | None = None) -> AssetChecksDefinition:
    """The ``recall_verdict`` check on ``training``, judging the registered ``model``."""
    t = translator or RecallTranslator()

    @asset_check(
        asset=training,
        name=t.check_name(VERDICT_CHECK),
        description=f"Recall's verdict on {model}'s production version: its tier against the fail tier, "
                    "its top reason and the next step in one line (every scan reports it; a run that trains "
                    "the model judges it there and then).",
        blocking=False,
        metadata={MODEL_KEY: model},
        additional_deps=[t.asset_key("risk_scores")],
    )
    def recall_verdict(recall: RecallResource) -> AssetCheckResult:
        verdict = _judged_now(recall, model)
        return AssetCheckResult(passed=verdict.passed, severity=verdict.severity, description=verdict.description,
                                metadata=_shown(verdict))

    return recall_verdict


def _judged_now(recall: RecallResource, model: str) -> Verdict:
    loaded = recall.configuration()
    config, at = loaded.scan, clock_ms()
    try:
        with recall.open_graph() as graph:
            judging = home_pipeline(recall.settings(), loaded, recording=False, measured=False)
            result = judging.scan(graph, scanned_at_ms=at, models=[model])
    except RecallError as err:
        return Verdict(False, AssetCheckSeverity.WARN, f"Recall could not judge {model}: {err}", {})
    verdict = verdict_of(model, result.models, config.scoring, at)
    return verdict or Verdict(False, AssetCheckSeverity.WARN,
                              f"{model} has no version in production: Recall cannot vouch for it", {})


def _shown(verdict: Verdict) -> dict[str, Any]:
    return {k: MetadataValue.text(v) if isinstance(v, str) else v for k, v in verdict.metadata.items()}


def watched(asset_graph: Any, translator: RecallTranslator) -> list[tuple[AssetCheckKey, str]]:
    """Each ``recall_verdict`` check in ``asset_graph`` (a code location's) and the registered model it judges."""
    name = translator.check_name(VERDICT_CHECK)
    found = [(key, str(getattr(model, "value", model))) for key, metadata in check_metadata(asset_graph)
             if key.name == name and (model := metadata.get(MODEL_KEY)) is not None]
    return sorted(found, key=lambda pair: pair[0].to_user_string())


def report_verdicts(instance: DagsterInstance, result: ScanResult, checks: Sequence[tuple[AssetCheckKey, str]]) -> int:
    """Record the verdict of each checked model the scan scored, runless (a rescan of chosen models leaves the
    others' standing); how many were recorded."""
    recorded = 0
    for key, model in checks:
        verdict = verdict_of(model, result.models, result.config.scoring, result.scanned_at_ms)
        if verdict is None:
            continue
        _record(instance, key, verdict)
        recorded += 1
    return recorded


def record_verdict(instance: DagsterInstance, recall: RecallResource, key: AssetCheckKey, model: str) -> None:
    """Judge ``model`` now and record it runless on ``key``: a retrain the gate refused skips the training's own
    check in its run, and the model must stay as red as it is rather than read "skipped" (the record is newer
    than the run's plan, so it is the check's latest execution)."""
    _record(instance, key, _judged_now(recall, model))


def _record(instance: DagsterInstance, key: AssetCheckKey, verdict: Verdict) -> None:
    instance.report_runless_asset_event(AssetCheckEvaluation(
        asset_key=key.asset_key, check_name=key.name, passed=verdict.passed, severity=verdict.severity,
        description=verdict.description, metadata=_shown(verdict)))
