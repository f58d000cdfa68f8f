"""Pre-mortem documents: for each at-risk model, what is about to break it and who can fix it.

One document per model, rewritten in place: its URN comes from the model, and
its text from the findings alone (no clock in it), so an unchanged diagnosis is
not rewritten and ``lastModified`` says when the diagnosis last changed.  When
the model stands down the document is unpublished with a banner on top, and
the last diagnosis stays readable as the record of what happened.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from datahub.metadata.schema_classes import (
    DocumentContentsClass,
    DocumentInfoClass,
    DocumentSourceClass,
    DocumentSourceTypeClass,
    DocumentStateClass,
    DocumentStatusClass,
    RelatedAssetClass,
)

from recall_dagster.detect import Finding
from recall_dagster.estate import Closure, display_name
from recall_dagster.narrate import finding_paragraph, owners_text, worst_first
from recall_dagster.results import ModelReport
from recall_dagster.instants import iso_instant
from recall_dagster.markdown import md_text
from recall_dagster.shown import shown
from recall_dagster.writeback.context import PlanContext
from recall_dagster.writeback.keys import MANAGED_BY, assertion_urn, document_urn, managed, stamp
from recall_dagster.writeback.writes import Write

def _datasets(closure: Closure, finding: Finding) -> list[str]:
    """Datasets on the finding's causal chain, and the one at fault."""
    chain = [u for u in finding.evidence.get("path", []) if u in closure.dataset_urns]
    return list(dict.fromkeys([*chain, *([finding.cause] if finding.cause else [])]))


def premortem(report: ModelReport) -> str:
    """The document's Markdown: findings worst first, each narrated (what, why, whom, what to do) with its
    chain and owners; every text from the graph shown by :func:`md_text`."""
    closure, model = report.closure, report.closure.model
    lines = [
        f"# Pre-mortem: {md_text(model.name)}",
        "",
        f"Recall scores **{md_text(model.name)}** {report.score.tier} ({report.score.value}), "
        f"serving from {len(closure.live_deployments)} live deployment(s). "
        f"Model owners: {md_text(owners_text(model.owners))}.",
    ]
    for number, finding in enumerate(worst_first(report.findings), 1):
        chain = " → ".join(display_name(u) for u in finding.evidence.get("path", []))
        lines += ["", f"## {number}. {finding.severity.value}: {finding.detector}", "",
                  md_text(finding_paragraph(closure, finding)), ""]
        lines.append(f"- Causal chain: {md_text(chain)}")
        for dataset in _datasets(closure, finding):
            owners = owners_text(closure.dataset(dataset).owners)
            lines.append(f"- Owners of {md_text(display_name(dataset))}: {md_text(owners)}")
        if finding.cause:
            lines.append(f"- Assertion: {assertion_urn(finding.detector, finding.subject)}")
    return "\n".join(lines) + "\n"


def _info(report: ModelReport, current: DocumentInfoClass | None, now_ms: int) -> DocumentInfoClass:
    closure = report.closure
    related = [closure.urn, *dict.fromkeys(d for f in report.findings for d in _datasets(closure, f))]
    return recall_document(
        f"Pre-mortem: {closure.model.name}", premortem(report), f"{MANAGED_BY}:{closure.urn}", related,
        managed(**{"recall.model": closure.urn}), current, now_ms,
    )


def recall_document(
    title: str,
    text: str,
    external_id: str,
    related: Sequence[str],
    properties: Mapping[str, str],
    current: DocumentInfoClass | None,
    now_ms: int,
) -> DocumentInfoClass:
    """A published document of Recall's about ``related`` assets, stamped so that an unchanged one is no write;
    its ``title`` (which names a model or a table) one line of :func:`shown` text, and its ``text`` shown line
    by line: the Markdown builders escape what Markdown acts on, and no document holds a control character."""
    return restamped(
        DocumentInfoClass(
            title=shown(title),
            status=DocumentStatusClass(state=DocumentStateClass.PUBLISHED),
            contents=DocumentContentsClass(text=shown(text, lines=True)),
            source=DocumentSourceClass(sourceType=DocumentSourceTypeClass.EXTERNAL, externalId=external_id),
            relatedAssets=[RelatedAssetClass(asset=u) for u in related],
            customProperties=dict(properties),
            created=stamp(now_ms),
            lastModified=stamp(now_ms),
        ),
        current,
        now_ms,
    )


def restamped(info: DocumentInfoClass, current: DocumentInfoClass | None, now_ms: int) -> DocumentInfoClass:
    """``info`` keeping the current document's creation, and its lastModified unless the text changed,
    so writing the same document again is no write at all."""
    if current is None:
        return info
    info.created, info.lastModified = current.created, current.lastModified
    if info.to_obj() != current.to_obj():
        info.lastModified = stamp(now_ms)
    return info


def _stood_down(ctx: PlanContext, current: DocumentInfoClass, model: str) -> DocumentInfoClass:
    if current.status.state == DocumentStateClass.UNPUBLISHED:
        return current
    report = ctx.report_of(model)
    why = f"scored {report.score.tier}" if report is not None else "was no longer scanned"
    when = iso_instant(ctx.result.scanned_at_ms)
    banner = f"> Stood down: {md_text(display_name(model))} {why} on the scan of {when}.\n\n"
    info = DocumentInfoClass.from_obj(current.to_obj())
    info.status = DocumentStatusClass(state=DocumentStateClass.UNPUBLISHED)
    info.contents = DocumentContentsClass(text=banner + current.contents.text)
    info.lastModified = stamp(ctx.now_ms)
    return info


def plan_documents(ctx: PlanContext) -> list[Write]:
    writes = []
    live = set()
    for report in ctx.result.models:
        if not ctx.at_or_above(report, ctx.config.document_tier):
            continue
        urn = document_urn(report.closure.urn)
        live.add(urn)
        info = _info(report, ctx.state.aspect(urn, DocumentInfoClass), ctx.now_ms)
        writes.append(Write.of("document", urn, info, info.title or urn))
    for urn in ctx.state.documents:
        current = ctx.state.aspect(urn, DocumentInfoClass)
        if urn in live or current is None:
            continue
        info = _stood_down(ctx, current, current.customProperties.get("recall.model", ""))
        writes.append(Write.of("document", urn, info, f"stood down: {info.title}"))
    return writes
