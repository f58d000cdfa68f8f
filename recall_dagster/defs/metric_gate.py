"""The metric gate as a blocking asset check on a training asset: a regressed version is never promoted.

A team's training asset registers a candidate; the team's promotion asset
(the alias move) sits downstream of it.  :func:`metric_gate` adds a blocking
check to the training asset that runs ``recall diagnose``'s gate on the newest
version against the one the production alias names: on a regression the
check fails with the ranked causes in its metadata, and Dagster skips the
promotion.  The repair is left to ``recall diagnose`` (proving it retrains in
a copy, too slow for every run); the evidence and the DataHub document are
written here as there.
"""

from __future__ import annotations

from typing import Any


from dagster import AssetCheckResult, AssetCheckSeverity, AssetChecksDefinition, AssetKey, MetadataValue, asset_check

from recall_dagster.defs.resources import RecallResource
from recall_dagster.defs.translator import RecallTranslator
from recall_dagster.diagnose.collect import Configs, NoBaseline
from recall_dagster.diagnose.publish import record_diagnosis
from recall_dagster.diagnose.service import Diagnosis, diagnose, version_urns
from recall_dagster.clock import clock_ms
from recall_dagster.scan_markdown import table
from recall_dagster.shown import shown

METRIC_GATE = "metric_gate"


def metric_gate(training: AssetKey, model: str, translator: RecallTranslator | None = None) -> AssetChecksDefinition:
    """A blocking ``metric_gate`` check on ``training``, judging the newest version of registered ``model``."""

    @asset_check(
        asset=training, name=(translator or RecallTranslator()).check_name(METRIC_GATE), blocking=True,
        description=f"Fails when the version of {model} this training registered regresses against production; "
                    "what is downstream (its promotion) then does not run.",
    )
    def check(recall: RecallResource) -> AssetCheckResult:
        settings, loaded = recall.settings(), recall.configuration()
        configs = Configs(loaded.scan, loaded.lifecycle, loaded.diagnose, loaded.impact)
        now_ms = clock_ms()
        with recall.open_graph(read_only=False) as graph:
            try:
                result = diagnose(graph, recall.mlflow_client(), model, configs, recall.models(), now_ms, repair=False)
            except NoBaseline as err:
                return AssetCheckResult(passed=True, description=shown(f"SKIP: {err}"),
                                        metadata={"verdict": "SKIP", "reason": str(err)})
            record = record_diagnosis(graph, settings.evidence_dir, result, version_urns(graph, result, configs.scan),
                                      loaded.writeback, now_ms)
        return AssetCheckResult(
            passed=result.verdict == "PASS",
            severity=AssetCheckSeverity.ERROR,
            description=shown(f"{result.verdict}: {result.reason}"),
            metadata={**diagnosis_metadata(result), "evidence": MetadataValue.path(str(record.evidence[1]))},
        )

    return check


def diagnosis_metadata(d: Diagnosis) -> dict[str, Any]:
    """The gate's metrics and the ranked causes, as a person reads them in the UI."""
    metrics = ((r.name, r.baseline, r.candidate, "yes" if r.regressed else "no") for r in d.gate.rows)
    causes = ((h.kind, f"{h.score:.3f}", "; ".join(c.detail for c in h.evidence)) for h in d.hypotheses)
    return {
        "verdict": d.verdict,
        "reason": d.reason,
        "candidate": d.pair.candidate,
        "baseline": d.pair.baseline,
        "metrics": MetadataValue.md(table(("metric", "baseline", "candidate", "regressed"), metrics)),
        "hypotheses": MetadataValue.md(table(("hypothesis", "score", "evidence"), causes) if d.hypotheses else "-"),
    }
