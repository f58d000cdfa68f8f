"""An impact test's record: evidence files first, then a document and a verdict property per model.

The evidence (``RECALL_HOME/evidence/impact/<experiment>.json`` and ``.md``)
is written before anything is sent, so a write-back that fails loses nothing:
the experiment is on disk and the next run sends it again.  The experiment's
id, the documents' URNs and their text come from the experiment alone (no
clock), so running the same test twice writes nothing the second time.
Documents carry their own mark (``recall-impact``), apart from the scan's
pre-mortems, whose stand-down would otherwise unpublish them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from datahub.emitter.mce_builder import datahub_guid
from datahub.metadata.schema_classes import (
    DocumentInfoClass,
    PropertyValueClass,
    StructuredPropertiesClass,
    StructuredPropertyDefinitionClass,
    StructuredPropertyValueAssignmentClass,
)
from datahub.metadata.urns import DocumentUrn, StructuredPropertyUrn

from recall_dagster.contracts import records as contract
from recall_dagster.estate import display_name
from recall_dagster.estate.marks import MANAGED_BY_KEY
from recall_dagster.files import write_record
from recall_dagster.graph.port import MetadataGraph
from recall_dagster.impact.experiment import ImpactReport, describe_change
from recall_dagster.impact.policy import Verdict
from recall_dagster.scan_markdown import number
from recall_dagster.writeback.config import RetryPolicy
from recall_dagster.writeback.direct import write_changed
from recall_dagster.writeback.documents import recall_document
from recall_dagster.writeback.properties import definition
from recall_dagster.writeback.state import GraphState
from recall_dagster.writeback.writes import Write
from recall_dagster.markdown import md_text

IMPACT_VERDICT = StructuredPropertyUrn("recall.impactVerdict").urn()
MANAGED_BY = {MANAGED_BY_KEY: "recall-impact"}


def experiment_id(report: ImpactReport) -> str:
    """Stable for the same change on the same column, whatever the models said."""
    return datahub_guid(
        {
            "recall": "impact",
            "dataset": report.dataset,
            "column": report.column,
            "mutation": report.mutation.label,
            "fraction": str(report.mutation.fraction),
        }
    )



def markdown(report: ImpactReport) -> str:
    """The experiment as a person reads it: what changed, each model's verdict and why."""
    change = describe_change((report.dataset, report.column), report.mutation)
    lines = [f"# Impact test: {md_text(change)}", "", f"Verdict: **{report.verdict.value}**", ""]
    if not report.results:
        lines.append(f"No production model reads {md_text(report.target)}: nothing is affected.")
        return "\n".join(lines) + "\n"
    lines += [
        "| model | version | input | verdict | metric | baseline | mutated | delta (CI) | flips | shift | failures | rows |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in report.results:
        c = r.contract()
        ci = c.ci
        delta = f"{number(c.delta)} ({number(ci[0])}, {number(ci[1])})" if ci else number(c.delta)
        flips = f"{c.flip_rate:.1%}" if c.flip_rate is not None else "–"
        lines.append(
            f"| {md_text(c.model)} | {number(c.version)} | {md_text(c.feature)} | {c.verdict} "
            f"| {md_text(number(c.metric))} "
            f"| {number(c.baseline)} | {number(c.mutated)} | {delta} | {flips} | {number(c.mean_abs_shift)} "
            f"| {number(c.failures)} | {number(c.rows)} |"
        )
    lines += ["", "## Why", ""]
    for r in report.results:
        derived = [i.name for i in r.inputs if i.derived]
        note = f" ({', '.join(derived)} derived from the column: the change is replayed on it as is)" if derived else ""
        lines.append(f"- {md_text(f'{r.closure.model.name} / {r.feature}: {r.verdict.value}. {r.reason}{note}')}")
    return "\n".join(lines) + "\n"


def write_evidence(evidence_dir: Path, report: ImpactReport, measured_at_ms: int) -> list[Path]:
    """``evidence/impact/<id>.json`` and ``.md``, replaced atomically; the record the graph writes follow."""
    ident = experiment_id(report)
    body = {**report.contract().as_json(), "experiment": ident, "measured_at_ms": measured_at_ms}
    return write_record(evidence_dir / "impact", ident, body, markdown(report), "evidence")


def document_urn(report: ImpactReport, model_urn: str) -> str:
    return DocumentUrn(datahub_guid({"recall": "impact", "experiment": experiment_id(report), "model": model_urn})).urn()


def impact_writes(report: ImpactReport, state: GraphState, now_ms: int) -> list[Write]:
    """Every aspect the experiment wants in the graph, definition first."""
    writes = [
        definition(
            IMPACT_VERDICT,
            "string",
            "Recall impact verdict",
            "The verdict of the latest impact test on this model: an upstream change replayed on its "
            "evaluation rows (PASS, WARN, BLOCK, INCOMPLETE).",
            allowedValues=[PropertyValueClass(value=v.value) for v in Verdict],
        )
    ]
    for model_urn, verdict in sorted(report.model_verdicts().items()):
        current = state.aspect(model_urn, StructuredPropertiesClass)
        others = [p for p in (current.properties if current else []) if p.propertyUrn != IMPACT_VERDICT]
        ours = StructuredPropertyValueAssignmentClass(propertyUrn=IMPACT_VERDICT, values=[verdict.value])
        writes.append(
            Write.of(
                "property", model_urn, StructuredPropertiesClass(properties=[*others, ours]), f"impact verdict {verdict.value}"
            )
        )
        urn = document_urn(report, model_urn)
        info = recall_document(
            f"Impact test on {display_name(model_urn)}: "
            f"{describe_change((report.dataset, report.column), report.mutation)} -> {verdict.value}",
            markdown(report), f"recall-impact:{experiment_id(report)}", (model_urn, report.dataset),
            {**MANAGED_BY, "recall.model": model_urn, "recall.verdict": verdict.value},
            state.aspect(urn, DocumentInfoClass), now_ms,
        )
        writes.append(Write.of("document", urn, info, info.title or urn))
    return writes


@dataclass
class ImpactPublished:
    evidence: list[Path]
    writes: int = 0
    failures: list[str] = field(default_factory=list)

    def contract(self) -> contract.Record:
        """Where ``recall impact --json`` says the experiment was kept."""
        return contract.Record(evidence=[str(p) for p in self.evidence], writes=self.writes, failures=self.failures)


def publish_impact(
    graph: MetadataGraph,
    report: ImpactReport,
    evidence: list[Path],
    policy: RetryPolicy,
    now_ms: int,
    sleep: Callable[[float], None] = time.sleep,
) -> ImpactPublished:
    """Send what the graph lacks; what fails after retries is listed, the evidence already holds it."""
    models = sorted(report.model_verdicts())
    landed, failures = write_changed(
        graph,
        [IMPACT_VERDICT, *models, *(document_urn(report, m) for m in models)],
        (DocumentInfoClass, StructuredPropertiesClass, StructuredPropertyDefinitionClass),
        lambda state: impact_writes(report, state, now_ms),
        policy,
        sleep,
    )
    return ImpactPublished(evidence=evidence, writes=landed, failures=failures)
