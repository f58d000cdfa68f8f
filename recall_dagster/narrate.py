"""Plain-language paragraphs a person can act on: what happened, why it matters for which deployments, whom to
call, what to do.

Deterministic templates over Recall's own answers (a finding in its closure, a
gate verdict's JSON, a blind window's cause JSON): the same answer always reads
the same, so a document that narrates it is rewritten only when the answer
changes. The terminal report, the write-back documents, the CLI's text output
and the MCP tools all speak through these; nothing here needs a language model.
A team may still have one reword what a person reads at the terminal
(:class:`recall_dagster.rewrite.Rewrite`, off by default); the JSON always keeps the template.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from recall_dagster.detect import Finding
from recall_dagster.estate import Closure, Owner, display_name

WHAT_TO_DO = {
    "training_source_schema_drift": "Compare the column with the type the model was trained on; "
    "retrain on the new schema or restore the old type, then accept it with `recall scan --accept-schema TABLE`.",
    "orphaned_feature": "Point the feature at a dataset the catalog knows (or its replacement) and retrain, "
    "or drop the feature from the model.",
    "upstream_staleness": "Find out why the table stopped refreshing (its job, its sources): "
    "the model serves stale data until it does.",
    "ownership_vacuum": "Name an active owner in DataHub: nobody is paged when this breaks.",
    "training_serving_skew": "Serve from what the model was trained on, or retrain on what it serves.",
    "undocumented_critical_path": "Document the table in DataHub: upstreams meet in it and models depend on it.",
    "blast_radius": "Fix the at-risk dataset first: it endangers the most live traffic.",
    "pii_exposure": "Justify the personal data on the model (tag or property) or stop feeding the column.",
    "failing_assertion": "Fix the data the failing test names and rerun the test before the next retrain.",
    "deprecated_upstream": "Move to the replacement the deprecation names before the table disappears.",
    "version_mismatch": "Deploy the version the registry marks production, or move the alias to it.",
    "profile_drift": "Ask the table's owner whether the values changed meaning (a unit, a scale, a default); "
    "convert them back upstream, or retrain on the new values and measure it with `recall impact`.",
}
DEFAULT_STEP = "Read the evidence in the scan report and decide with the model's owners."


def owners_text(owners: Sequence[Owner]) -> str:
    """Active owners by name, departed ones marked; ``nobody`` when none is recorded."""
    if not owners:
        return "nobody"
    return ", ".join(display_name(o.urn) + ("" if o.active else " (left)") for o in owners)


def whom_to_call(closure: Closure, finding: Finding) -> str:
    """The active owners of the dataset at fault, else of the model: who can act on it first."""
    if finding.cause and finding.cause in closure.dataset_urns:
        active = [o for o in closure.dataset(finding.cause).owners if o.active]
        if active:
            return f"{owners_text(active)} (owning {display_name(finding.cause)})"
    active = [o for o in closure.model.owners if o.active]
    return f"{owners_text(active)} (owning {closure.model.name})" if active else "nobody: no active owner is recorded"


def why_it_matters(closure: Closure) -> str:
    live = [display_name(d.urn) for d in closure.live_deployments]
    where = f"serves live traffic from {', '.join(live)}" if live else "serves no live deployment"
    stage = "a production version" if closure.production else "not a production version"
    return f"{closure.model.name} is {stage} and {where}"


def finding_paragraph(closure: Closure, finding: Finding) -> str:
    """What, why it matters, whom to call, what to do: one finding as a person acts on it."""
    return (f"{finding.severity.value}: {finding.message}. Why it matters: {why_it_matters(closure)}. "
            f"Call {whom_to_call(closure, finding)}. "
            f"What to do: {WHAT_TO_DO.get(finding.detector, DEFAULT_STEP)}")


def worst_first(findings: Sequence[Finding]) -> list[Finding]:
    """Findings in the order a person reads them: most serious first, then by detector and subject."""
    return sorted(findings, key=lambda f: (f.severity.rank, f.detector, f.subject))


def headline(tier: str, score: int, findings: Sequence[Finding]) -> str:
    """A model's verdict in one line an operator reads in a table: its tier, its top reason and the next step."""
    if not findings:
        return f"{tier} {score}: no findings"
    top, more = worst_first(findings)[0], len(findings) - 1
    also = f" (+{more} more)" if more else ""
    return f"{tier} {score}: {top.message}{also}. Next: {WHAT_TO_DO.get(top.detector, DEFAULT_STEP)}"


def gate_paragraph(gate: Mapping[str, Any]) -> str:
    """A retrain gate verdict (its JSON) in a sentence or three."""
    name, verdict = gate["registered_model"], gate["verdict"]
    failing = [c for c in gate["checks"] if c["status"] == "FAIL"]
    skipped = gate["coverage"]["skipped"]
    warned = [c["name"] for c in gate["checks"] if c["status"] == "WARN"]
    advice = f" Advisory check(s) warn: {', '.join(warned)}." if warned else ""
    if verdict == "GO":
        unmeasured = f" {len(skipped)} check(s) could not measure: {', '.join(sorted(skipped))}." if skipped else ""
        return (f"Retraining {name} may go ahead: every check that measured passed (judged on {gate['name']})."
                f"{unmeasured}{advice}")
    if verdict == "NO-GO":
        reasons = "; ".join(f"{c['name']}: {c['summary']}" for c in failing)
        return (f"Do not retrain {name} yet: {reasons}. Retraining now would fit the model on the data these checks "
                f"flag; fix them (or acknowledge a known risk with `recall ack`) and run the gate again.")
    missing = "; ".join(f"{check}: {skipped.get(check, 'skipped')}" for check in gate["unverified_checks"])
    return (f"Recall cannot vouch for retraining {name}: {missing or gate.get('reason') or 'a required check was skipped'}. "
            "Record the missing evidence (tests on the training data, freshness, training runs) or drop the check "
            "from lifecycle.gate.required if the team accepts the gap.")


def run_label(run: Mapping[str, Any] | None) -> str:
    """A Dagster run (its JSON) as people name it: the short id Dagster's UI shows, and where to open it."""
    if not run:
        return ""
    return f"Dagster run {run['run_id'][:8]}" + (f" ({run['url']})" if run.get("url") else "")


def trained_version(version: Mapping[str, Any]) -> str:
    """A version as a sentence names it: with the Dagster run that trained it, where one did."""
    run = version.get("trained_by")
    return f"{version['name']}, trained by {run_label(run)}," if run else str(version["name"])


def window_paragraph(cause: Mapping[str, Any]) -> str:
    """A blind window (one root cause's JSON): when the data was bad, which versions learned from it, what to
    roll back to."""
    window = cause.get("window") or {}
    tests = ", ".join(a["name"] for a in cause.get("assertions", ()))
    since = window.get("onset") or window.get("began_by") or "an unknown time"
    until = "and it still is" if window.get("open", True) else f"until {window.get('end') or 'an unknown time'}"
    parts = [f"The data behind {tests or 'a failing test'} was bad from {since} at the earliest, {until}."]
    for model in cause.get("models", ()):
        bad = [trained_version(v) for v in model["versions"] if v["verdict"] == "CONTAMINATED"]
        live = [v["name"] for v in model["versions"] if v["verdict"] == "CONTAMINATED" and v["live_deployments"]]
        unknown = [v["name"] for v in model["versions"] if v["verdict"] == "UNKNOWN"]
        suspect = [v["name"] for v in model["versions"] if v["verdict"] == "SUSPECT"]
        line = f"{model['name']}: " + (f"{', '.join(bad)} trained on it" if bad else "no version trained on it")
        if live:
            line += f", and {', '.join(live)} serve{'s' if len(live) == 1 else ''} traffic now"
        if suspect:
            line += f"; {', '.join(suspect)} may have (suspect, neither convicted nor cleared: see its reason)"
        if unknown:
            line += f"; {', '.join(unknown)} cannot be judged (training time unknown)"
        for v in model["versions"]:
            if v.get("gate_override"):
                past = v["gate_override"]
                line += (f"; {v['name']} was trained past a {past['verdict'] or 'refusing'} retrain gate by "
                         f"{past['by']} ({past['reason']})")
        rollback = model.get("rollback")
        note = model["rollback_note"].rstrip(".")
        line += f". Roll back to {rollback['name']}." if rollback and live else f". {note[:1].upper()}{note[1:]}."
        parts.append(line)
    return " ".join(parts)
