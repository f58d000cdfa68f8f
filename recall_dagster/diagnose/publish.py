"""A diagnosis on record: evidence files first, then a DataHub document, then the team's channels.

The evidence (``RECALL_HOME/evidence/diagnose/<model>-v<candidate>-vs-v<baseline>``
``.json`` and ``.md``) is written before anything is sent.  The document's URN
and text come from the diagnosis alone, so diagnosing the same pair again
rewrites nothing; channels hear of a diagnosis only when its verdict or
ranking changed since the evidence last recorded it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from datahub.emitter.mce_builder import datahub_guid
from datahub.metadata.schema_classes import DocumentInfoClass
from datahub.metadata.urns import DocumentUrn

from recall_dagster.contracts import records as contract
from recall_dagster.diagnose.service import Diagnosis
from recall_dagster.estate.marks import MANAGED_BY_KEY
from recall_dagster.files import rewrite_record
from recall_dagster.graph.port import MetadataGraph
from recall_dagster.scan_markdown import number
from recall_dagster.writeback.config import WritebackConfig
from recall_dagster.writeback.direct import write_changed
from recall_dagster.writeback.documents import recall_document
from recall_dagster.writeback.notify import Notice, announce, channels
from recall_dagster.writeback.state import GraphState
from recall_dagster.writeback.writes import Write
from recall_dagster.markdown import md_text

MANAGED_BY = {MANAGED_BY_KEY: "recall-diagnose"}


def diagnosis_id(d: Diagnosis) -> str:
    return f"{d.pair.model}-v{d.pair.candidate}-vs-v{d.pair.baseline}"


def markdown(d: Diagnosis) -> str:
    """The diagnosis as a reviewer reads it: the gate, the causes with their signals, the repair."""
    lines = [f"# Diagnosis: {md_text(d.pair.model)} version {md_text(d.pair.candidate)} against version "
             f"{md_text(d.pair.baseline)}", "",
             f"Verdict: **{d.verdict}**. {md_text(d.reason)}", "", "## Metric gate", "",
             "| metric | baseline | candidate | delta | regressed |", "|---|---|---|---|---|"]
    for row in d.gate.rows:
        lines.append(f"| {md_text(row.name)} | {number(row.baseline)} | {number(row.candidate)} | {number(row.delta)} | "
                     f"{'yes' if row.regressed else 'no'} |")
    if d.hypotheses:
        lines += ["", "## Hypotheses, best first", ""]
        for place, h in enumerate(d.hypotheses, 1):
            signals = ", ".join(f"{s.name} {s.value:.2f}×{s.weight:g}" for s in h.signals)
            lines.append(f"{place}. **{h.kind}** {h.score:.3f} ({signals})")
            lines += [f"   - {md_text(c.detail)}" for c in h.evidence]
            lines += [f"   - against: {md_text(c.detail)}" for c in h.counter]
    for place, r in enumerate(d.repairs):
        heading = "Repair" if place == 0 else "Alternative"
        lines += ["", f"## {heading}: {r.strategy} ({r.proof})", "", md_text(r.description), "", md_text(r.reason)]
        if r.metric:
            lines.append(f"\n{r.metric}: {number(r.metric_before)} (candidate) -> {number(r.metric_after)} (repaired)")
        if r.patch:
            lines += ["", "```diff", r.patch.rstrip("\n"), "```"]
    if d.facts is not None and d.facts.unverified:
        lines += ["", "## Not verified", "", *(f"- {md_text(u)}" for u in d.facts.unverified)]
    return "\n".join(lines) + "\n"



def _gist(body: dict[str, Any]) -> Any:
    return (body.get("verdict"), [(h["kind"], h["score"]) for h in body.get("hypotheses", [])])


def write_evidence(evidence_dir: Path, d: Diagnosis, now_ms: int) -> tuple[list[Path], bool]:
    """The JSON and Markdown, replaced atomically; whether the verdict or ranking changed since the last."""
    body = {**d.contract().as_json(), "diagnosed_at_ms": now_ms}
    paths, previous = rewrite_record(evidence_dir / "diagnose", diagnosis_id(d), body, markdown(d), "evidence")
    return paths, _gist(previous) != _gist(body)


@dataclass
class DiagnosisRecord:
    evidence: list[Path]
    writes: int = 0
    failures: list[str] = field(default_factory=list)
    notices: list[Notice] = field(default_factory=list)

    def contract(self) -> contract.DiagnosisRecord:
        """Where ``recall diagnose --json`` says the diagnosis was kept, and whom it told."""
        return contract.DiagnosisRecord(
            evidence=[str(p) for p in self.evidence],
            writes=self.writes,
            failures=self.failures,
            notified=[n.channel for n in self.notices if n.error is None],
            notify_errors=[f"{n.channel}: {n.error}" for n in self.notices if n.error],
        )


def document_urn(d: Diagnosis) -> str:
    return DocumentUrn(datahub_guid({"recall": "diagnose", "diagnosis": diagnosis_id(d)})).urn()


def record_diagnosis(
    graph: MetadataGraph | None,
    evidence_dir: Path,
    d: Diagnosis,
    models: Sequence[str],
    config: WritebackConfig,
    now_ms: int,
    sleep: Callable[[float], None] = time.sleep,
) -> DiagnosisRecord:
    """Evidence, then (given a graph) the document related to ``models`` (mlModel URNs), then the channels."""
    paths, news = write_evidence(evidence_dir, d, now_ms)
    record = DiagnosisRecord(paths)
    if graph is not None and d.verdict != "PASS":
        urn = document_urn(d)

        def document(state: GraphState) -> list[Write]:
            info = recall_document(
                f"Diagnosis: {d.pair.model} v{d.pair.candidate} vs v{d.pair.baseline} -> {d.verdict}", markdown(d),
                f"recall-diagnose:{diagnosis_id(d)}", models, {**MANAGED_BY, "recall.verdict": d.verdict},
                state.aspect(urn, DocumentInfoClass), now_ms,
            )
            return [Write.of("document", urn, info, info.title or urn)]

        record.writes, record.failures = write_changed(graph, [urn], [DocumentInfoClass], document, config.retry, sleep)
    if news and d.verdict != "PASS":
        chans, _ = channels(config)
        top = d.hypotheses[0].kind if d.hypotheses else "no hypothesis"
        record.notices = announce(chans, diagnosis_id(d), f"{d.pair.model} v{d.pair.candidate} regressed: {d.verdict}",
                                  f"{d.reason}\nBest hypothesis: {top}. Evidence: {paths[1]}")
    return record
