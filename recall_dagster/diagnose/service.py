"""``recall diagnose``: the metric gate, then (on a regression) ranked causes and the smallest repair.

The CLI and the Dagster metric-gate check call :func:`diagnose`; what it
reads comes through MLflow and the graph, what it decides is pure
(:mod:`~recall_dagster.diagnose.gate`, :mod:`~recall_dagster.diagnose.hypotheses`),
and a repair is only ever edited and proven in a copy
(:mod:`~recall_dagster.diagnose.repair`).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Literal, Mapping

from recall_dagster.detect import RecallConfig
from recall_dagster.diagnose.collect import Configs, Pair, collect, pick_versions, run_facts
from recall_dagster.diagnose.config import DiagnoseConfig
from recall_dagster.diagnose.facts import Facts
from recall_dagster.diagnose.gate import GateOutcome, metric_gate
from recall_dagster.diagnose.hypotheses import Hypothesis, decide, rank
from recall_dagster.diagnose.repair import RepairRefused, Validation, guarded_division_edits, prove_smallest
from recall_dagster.errors import ModelNotFound
from recall_dagster.graph.port import MetadataGraph
from recall_dagster.impact.models import ModelSource
from recall_dagster.scan import select_closures

SCHEMA_VERSION = 1
Verdict = Literal["PASS", "REGRESSION", "INCONCLUSIVE"]
Progress = Callable[[str], None]
MetricsOf = Callable[[str], Mapping[str, float]]  # a version's logged metrics


@dataclass(frozen=True)
class Repair:
    strategy: str  # "guard_division" | "rollback"
    description: str
    patch: str | None
    validated: bool
    metric: str | None
    metric_before: float | None  # the candidate's
    metric_after: float | None  # the repaired copy's (or the rollback target's), when measured
    reason: str
    tried: tuple[Validation, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "description": self.description,
            "patch": self.patch,
            "validated": self.validated,
            "metric": self.metric,
            "metric_before": self.metric_before,
            "metric_after": self.metric_after,
            "reason": self.reason,
            "tried": [v.to_json() for v in self.tried],
        }


@dataclass(frozen=True)
class Diagnosis:
    pair: Pair
    gate: GateOutcome
    verdict: Verdict
    reason: str
    hypotheses: tuple[Hypothesis, ...] = ()
    repair: Repair | None = None
    facts: Facts | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "model": self.pair.model,
            "candidate": self.pair.candidate,
            "baseline": self.pair.baseline,
            "gate": self.gate.to_json(),
            "verdict": self.verdict,
            "reason": self.reason,
            "hypotheses": [h.to_json() for h in self.hypotheses],
            "repair": self.repair.to_json() if self.repair else None,
            "unverified": list(self.facts.unverified) if self.facts else [],
        }


def _guarded_division(
    facts: Facts, top: Hypothesis, dc: DiagnoseConfig, primary: str | None, env: Mapping[str, str] | None
) -> Repair | None:
    """Guard each division of the changed transform in turn, in a copy; keep the first that restores the metric."""
    clue = next((c for c in top.evidence if c.kind == "transform_changed" and c.data.get("function")), None)
    if clue is None:
        return None
    project = Path(dc.repair.project).expanduser()
    module, function = str(clue.data["module"]), str(clue.data["function"])
    before = facts.candidate.metrics.get(primary) if primary else None

    def restored(metrics: dict[str, float]) -> bool:
        """The primary metric back within tolerance of the baseline (every metric, when none is primary)."""
        gate = metric_gate(metrics, facts.baseline.metrics, dc)
        rows = [r for r in gate.rows if r.name == primary] if primary else list(gate.rows)
        return bool(rows) and not any(r.regressed for r in rows)

    try:
        edits = guarded_division_edits(project, module, function)
        chosen, tried = prove_smallest(
            project, edits, dc.repair, {"model": facts.model, "python": sys.executable}, restored, env
        )
    except RepairRefused as err:
        return Repair("guard_division", f"guard the divisions of {module}:{function}", None, False, primary,
                      before, None, str(err))
    if chosen is None:
        shown = tried[0] if tried else None
        why = ("no repair command is configured (diagnose.repair.command): proposed, not proven"
               if not dc.repair.command else f"no guarded division brought {primary or 'the metrics'} back within tolerance")
        return Repair("guard_division", shown.edit.description if shown else f"guard {module}:{function}",
                      shown.edit.patch if shown else None, False, primary, before,
                      shown.metrics.get(primary) if shown and shown.metrics and primary else None, why, tuple(tried))
    after = chosen.metrics.get(primary) if chosen.metrics and primary else None
    return Repair("guard_division", chosen.edit.description, chosen.edit.patch, True, primary, before, after,
                  f"retrained in a copy of {project}: {primary or 'every metric'} is back within tolerance of "
                  f"version {facts.baseline.version}", tuple(tried))


def _rollback(facts: Facts, top: Hypothesis, primary: str | None, metrics_of: MetricsOf) -> Repair:
    """To the newest version the blind window proves clean, when it names one; else keep the baseline."""
    clue = next((c for c in top.evidence if c.kind == "contaminated" and c.data.get("rollback")), None)
    target = str(clue.data["rollback"]) if clue else facts.baseline.version
    why = (f"the blind window names it: {clue.data.get('rollback_note')}" if clue
           else f"version {target}'s own logged metrics are the ones the candidate failed to match")
    after = metrics_of(target).get(primary) if primary else None
    return Repair("rollback", f"keep (or roll back to) version {target}", None, after is not None, primary,
                  facts.candidate.metrics.get(primary) if primary else None, after, why)


def propose_repair(
    facts: Facts, ranked: tuple[Hypothesis, ...], dc: DiagnoseConfig, primary: str | None,
    metrics_of: MetricsOf, env: Mapping[str, str] | None = None,
) -> Repair | None:
    """From the catalogue, for the best hypothesis: a guarded transform, else a rollback to the baseline.
    ``env`` is the environment the proving command runs in (the caller's, with its RECALL_HOME)."""
    if not ranked:
        return None
    top = ranked[0]
    if top.kind == "feature_transformation":
        guarded = _guarded_division(facts, top, dc, primary, env)
        if guarded is not None:
            return guarded
    if top.kind == "no_data_cause":
        return None
    return _rollback(facts, top, primary, metrics_of)


def diagnose(
    graph: MetadataGraph,
    client: Any,
    model: str,
    configs: Configs,
    source: ModelSource,
    now_ms: int,
    *,
    candidate: str | None = None,
    baseline: str | None = None,
    repair: bool = True,
    env: Mapping[str, str] | None = None,
    progress: Progress = lambda _: None,
) -> Diagnosis:
    dc = configs.diagnose
    pair = pick_versions(client, model, candidate, baseline, sorted(configs.scan.resolve.production_aliases))
    progress(f"{model}: version {pair.candidate} against version {pair.baseline}")
    cand = run_facts(client, model, pair.candidate)
    base = run_facts(client, model, pair.baseline)
    gate = metric_gate(cand.metrics, base.metrics, dc)
    if gate.verdict == "PASS":
        return Diagnosis(pair, gate, "PASS", gate.reason)
    if gate.verdict == "UNVERIFIED":
        return Diagnosis(pair, gate, "INCONCLUSIVE", gate.reason)
    progress("reading what changed between the two runs")
    facts = collect(graph, pair, (base, cand), configs, source, now_ms)
    ranked = rank(facts, gate.loss, dc.hypotheses)
    verdict, reason = decide(ranked, dc.hypotheses)
    proposal = None
    if repair and verdict == "REGRESSION":
        progress(f"proposing a repair for {ranked[0].kind}")
        proposal = propose_repair(
            facts, ranked, dc, gate.primary, lambda v: run_facts(client, model, v).metrics, env
        )
    return Diagnosis(pair, gate, verdict, reason, ranked, proposal, facts)


def version_urns(graph: MetadataGraph, d: Diagnosis, config: RecallConfig) -> list[str]:
    """The two versions as the graph names them (what a document is related to); one not ingested yet is left out."""
    urns = []
    for version in (d.pair.candidate, d.pair.baseline):
        try:
            found = select_closures(graph, config, scanned_at_ms=0, include_all=True, models=[f"{d.pair.model}/{version}"])
        except ModelNotFound:
            continue
        urns += [c.urn for c in found]
    return urns
