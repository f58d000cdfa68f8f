"""``recall diagnose``: the metric gate, then (on a regression) ranked causes and the smallest repair.

The CLI and the Dagster metric-gate check call :func:`diagnose`; what it
reads comes through MLflow and the graph, what it decides is pure
(:mod:`~recall_dagster.diagnose.metric_gate`, :mod:`~recall_dagster.diagnose.hypotheses`),
and a repair is only ever edited and proven in a copy
(:mod:`~recall_dagster.diagnose.repair`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Literal, Mapping

from recall_dagster.contracts import records as contract
from recall_dagster.contracts.base import VERSION
from recall_dagster.detect import ScanConfig
from recall_dagster.diagnose.collect import Configs, Pair, collect, pick_versions, run_facts
from recall_dagster.diagnose.facts import Facts
from recall_dagster.diagnose.metric_gate import MetricGateOutcome, metric_gate
from recall_dagster.diagnose.hypotheses import Hypothesis, decide, rank
from recall_dagster.diagnose.strategies import Repair, propose_repairs
from recall_dagster.errors import ModelNotFound
from recall_dagster.graph.port import MetadataGraph
from recall_dagster.impact.models import ModelSource
from recall_dagster.scan import select_closures

Verdict = Literal["PASS", "REGRESSION", "INCONCLUSIVE"]
Progress = Callable[[str], None]


@dataclass(frozen=True)
class Diagnosis:
    pair: Pair
    gate: MetricGateOutcome
    verdict: Verdict
    reason: str
    hypotheses: tuple[Hypothesis, ...] = ()
    repairs: tuple[Repair, ...] = ()  # the one to apply first, then the alternatives
    facts: Facts | None = None

    @property
    def repair(self) -> Repair | None:
        return self.repairs[0] if self.repairs else None

    def contract(self, record: contract.DiagnosisRecord | None = None) -> contract.Diagnosis:
        """The diagnosis as ``recall diagnose --json`` names it; ``record`` is where the CLI kept it (the evidence
        file is the diagnosis alone)."""
        answer = contract.Diagnosis(
            schema_version=VERSION,
            model=self.pair.model,
            candidate=self.pair.candidate,
            baseline=self.pair.baseline,
            gate=self.gate.contract(),
            verdict=self.verdict,
            reason=self.reason,
            hypotheses=[h.contract() for h in self.hypotheses],
            repair=self.repair.contract() if self.repair else None,
            alternatives=[r.contract() for r in self.repairs[1:]],
            unverified=list(self.facts.unverified) if self.facts else [],
        )
        if record is not None:
            answer.record = record
        return answer


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
    proposals: tuple[Repair, ...] = ()
    if repair and verdict == "REGRESSION":
        progress(f"proposing a repair for {ranked[0].kind}")
        proposals = propose_repairs(
            facts, ranked, dc, gate.primary, lambda v: run_facts(client, model, v).metrics, env
        )
    return Diagnosis(pair, gate, verdict, reason, ranked, proposals, facts)


def version_urns(graph: MetadataGraph, d: Diagnosis, config: ScanConfig) -> list[str]:
    """The two versions as the graph names them (what a document is related to); one not ingested yet is left out."""
    urns = []
    for version in (d.pair.candidate, d.pair.baseline):
        try:
            found = select_closures(graph, config, include_all=True, models=[f"{d.pair.model}/{version}"])
        except ModelNotFound:
            continue
        urns += [c.urn for c in found]
    return urns
