"""``recall evidence --model NAME``: a data-governance pack (EU AI Act Article 10) regenerated from live metadata.

Article 10 asks a provider of a high-risk system to show its data governance:
where the data comes from and how it flows, what checks it passes, which
personal data it holds and why that is justified, what is known to be missing,
which incidents happened and how they were remediated, which model versions
were trained on what.  Each section here is read from the graph, the incident
ledger and the lifecycle's verdicts at the moment the pack is made, never
written by hand, so regenerating it is the audit trail.  Markdown and JSON go
under ``RECALL_HOME/evidence/governance/`` first, then a DataHub document
related to the model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from recall_dagster.contracts import records as contract
from recall_dagster.contracts.base import VERSION
from recall_dagster.detect import ScanConfig
from recall_dagster.detect.pii_exposure import marks_pii, justified
from recall_dagster.estate import ModelClosure, display_name
from recall_dagster.files import write_record
from recall_dagster.graph.port import MetadataGraph
from recall_dagster.lifecycle.config import LifecycleConfig
from recall_dagster.lifecycle.ledger import Ledger
from recall_dagster.lifecycle.service import assess
from recall_dagster.markdown import md_text
from recall_dagster.protect.assess import gaps
from recall_dagster.instants import iso_instant
from recall_dagster.scan import select_closures
from recall_dagster.settings import Settings



def _sources(closures: Sequence[ModelClosure]) -> list[dict[str, Any]]:
    seen: dict[str, dict[str, Any]] = {}
    for closure in closures:
        direct = set(closure.direct_inputs)
        for urn, d in closure.datasets.items():
            name = closure.canonical(urn)
            if name in seen or d.copy_of:
                continue
            seen[name] = {
                "dataset": name,
                "name": d.name,
                "read_directly": name in direct,
                "upstreams": sorted({display_name(u) for u in closure.upstream_tables(urn)}),
                "owners": [o.urn for o in d.owners if o.active],
                "description": d.description,
            }
    return sorted(seen.values(), key=lambda s: (not s["read_directly"], s["name"]))


def _checks(closures: Sequence[ModelClosure]) -> list[dict[str, Any]]:
    checks: dict[str, dict[str, Any]] = {}
    for closure in closures:
        for d in closure.datasets.values():
            for a in d.assertions:
                checks.setdefault(a.urn, {
                    "assertion": a.urn, "name": a.name, "on": f"{d.name}.{a.column}" if a.column else d.name,
                    "latest_result": a.result, "failed_rows": a.failed_rows,
                    "ran_at": iso_instant(a.ran_at_ms) if a.ran_at_ms else None,
                })
    return sorted(checks.values(), key=lambda c: c["on"])


def _personal_data(closures: Sequence[ModelClosure], config: ScanConfig) -> contract.PersonalData:
    found = sorted({
        f"{d.name}.{f.path}" if f else d.name
        for c in closures for d in c.datasets.values()
        for f in [*(x for x in d.fields or () if marks_pii(x.tags, x.terms, config.pii)),
                  *([None] if marks_pii(d.tags, d.terms, config.pii) else [])]
    })
    model = closures[0].model
    reasons = [reason for p in config.justification.properties if (reason := model.properties.get(p))]
    return contract.PersonalData(columns=found, justified=justified(model, config.justification), justification=reasons)


def evidence_pack(
    graph: MetadataGraph, settings: Settings, config: ScanConfig, lc: LifecycleConfig, model: str, now_ms: int
) -> contract.EvidencePack:
    """Every section from live metadata, for the production versions of ``model`` (or the version it names)."""
    closures = select_closures(graph, config, models=[model])
    assessment = assess(graph, config, lc, now_ms)
    group = closures[0].registered_model
    every = [c for c in assessment.estate.closures if c.registered_model == group]
    versions: dict[str, dict[str, Any]] = {
        c.urn: {"version": c.model.version, "name": c.model.name, "production": c.production,
                "live_deployments": [d.urn for d in c.live_deployments], "verdicts": []}
        for c in every
    }
    for cause in assessment.causes:
        for m in cause.models:
            for v in m.versions:
                if v.model in versions:
                    versions[v.model]["verdicts"].append({
                        "status": v.verdict.status.value, "reason": v.verdict.reason,
                        "origins": [display_name(o[0]) + "." + o[1] for o in cause.origins],
                        "rollback_note": m.rollback_note,
                    })
    names = {c.urn for c in every}
    incidents = [
        {"incident": e.urn, "state": e.state, "tests": [a["name"] for a in e.snapshot.get("assertions", ())],
         "raised_at": iso_instant(e.raised_at_ms), "resolved_at": iso_instant(e.resolved_at_ms) if e.resolved_at_ms else None,
         "timeline": list(e.timeline), "postmortem": dict(e.postmortem) if e.postmortem else None}
        for e in Ledger(settings.state_dir, graph.location).load().values()
        if names & {m["urn"] for m in e.snapshot.get("blast_radius", {}).get("models", ())}
    ]
    model_view = closures[0].model
    return contract.EvidencePack(
        schema_version=VERSION,
        model=closures[0].registered_name,
        judged=[c.urn for c in closures],  # the versions the pack is about: production ones, or the one named
        generated_at=iso_instant(now_ms),
        graph=graph.location,
        owners=[o.urn for o in model_view.owners],
        data_sources=_sources(closures),
        quality_checks=_checks(closures),
        personal_data=_personal_data(closures, config),
        known_gaps=[g.contract() for g in gaps(closures, assessment.estate.columns, [])],
        incidents=sorted(incidents, key=lambda i: i["raised_at"]),
        versions=sorted(versions.values(), key=lambda v: int(v["version"] or 0) if str(v["version"] or "").isdigit() else 0),
    )


def markdown(pack: dict[str, Any]) -> str:
    """The pack for people: every line after Recall's own heading or bullet is graph text, shown by :func:`md_text`."""
    lines = [f"# Data governance evidence: {md_text(pack['model'])}", "",
             md_text(f"Regenerated from {pack['graph']} at {pack['generated_at']} (EU AI Act, Article 10)."), "",
             md_text(f"Owners: {', '.join(display_name(o) for o in pack['owners']) or 'none recorded'}"), "",
             "## Data sources and lineage", ""]
    for s in pack["data_sources"]:
        direct = "read by the model" if s["read_directly"] else "upstream"
        lines.append(_bullet(f"{s['name']} ({direct}); from: {', '.join(s['upstreams']) or 'no recorded upstream'}; "
                             f"owners: {', '.join(display_name(o) for o in s['owners']) or 'none'}"))
    lines += ["", "## Quality checks and their latest results", ""]
    lines += [_bullet(f"{c['name']} on {c['on']}: {c['latest_result'] or 'never run'}"
                      + (f" ({c['failed_rows']:,} failing rows)" if c["failed_rows"] else ""))
              for c in pack["quality_checks"]]
    pii = pack["personal_data"]
    lines += ["", "## Personal data", "", md_text(f"Columns marked personal: {', '.join(pii['columns']) or 'none'}."),
              md_text(f"Justified: {'yes' if pii['justified'] else 'no'}"
                      + (f" ({'; '.join(pii['justification'])})" if pii["justification"] else "")),
              "", "## Known gaps (untested columns the model reads)", ""]
    lines += [_bullet(f"{g['column']} ({', '.join(g['features'])})") for g in pack["known_gaps"]] or ["- none"]
    lines += ["", "## Incidents and remediation", ""]
    for i in pack["incidents"]:
        post = i["postmortem"]["document"] if i["postmortem"] else "no postmortem yet"
        lines.append(_bullet(f"{i['state']}: {', '.join(i['tests'])}; raised {i['raised_at']}, resolved "
                             f"{i['resolved_at'] or 'not yet'}; postmortem: {post}"))
    if not pack["incidents"]:
        lines.append("- none recorded")
    lines += ["", "## Versions and what they were trained on", ""]
    for v in pack["versions"]:
        verdicts = "; ".join(f"{x['status']} ({x['reason']})" for x in v["verdicts"]) or "no data incident reached it"
        lines.append(_bullet(f"{v['name']}{' (production)' if v['production'] else ''}: {verdicts}"))
    return "\n".join(lines) + "\n"


def _bullet(text: str) -> str:
    return f"- {md_text(text)}"


def write_pack(evidence_dir: Path, pack: dict[str, Any]) -> list[Path]:
    return write_record(evidence_dir / "governance", pack["model"], pack, markdown(pack), "governance evidence")
