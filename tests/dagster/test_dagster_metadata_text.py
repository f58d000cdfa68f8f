"""The Markdown the Dagster UI renders from the retrain gate and the rollback plan: text from the graph is text
there, its escape sequences and bidi overrides written out, its links and brackets inert."""

from __future__ import annotations

import re

from recall_dagster.defs.retrain_gate import MEASURED_CHECK, measured_metadata, verdict_metadata
from recall_dagster.defs.rollback import _metadata
from recall_dagster.detect import Finding, Severity
from recall_dagster.lifecycle.retrain_gate import CheckResult, GateResult
from recall_dagster.lifecycle.rollback import AliasMove, RollbackPlan
from recall_dagster.lifecycle.rollback_service import RollbackResult

# A table named with an OSC 8 hyperlink, a right-to-left override and a Markdown link.
NAME = "orders\x1b]8;;http://evil\x1b\\click\x1b]8;;\x1b\\ \u202e[x](http://evil)"
SHOWN = "orders\\\\x1b\\]8;;http://evil\\\\x1b\\\\click\\\\x1b\\]8;;\\\\x1b\\\\ \\\\u202e\\[x\\](http://evil)"


def _safe(markdown: str) -> str:
    """``markdown`` once checked to carry no escape, no override and no link a reader could click."""
    assert "\x1b" not in markdown and "\u202e" not in markdown and not re.search(r"(?<!\\)\]\(", markdown), markdown
    return markdown


def test_the_gate_s_findings_and_check_details_show_a_name_as_text() -> None:
    finding = Finding("failing_assertion", Severity.CRITICAL, "urn:li:assertion:a", f"not_null on {NAME} failed")
    check = CheckResult("failing_assertions", "FAIL", "1 failing test(s) upstream", (f"not_null on {NAME}",))
    verdict = GateResult("m_1", "m_1", "m", 0, (check,), (finding,))
    metadata = verdict_metadata(verdict)
    for key in ("critical_findings", "check_details"):
        assert SHOWN in _safe(metadata[key].value)


def test_the_measured_check_s_details_show_a_replayed_finding_as_text() -> None:
    measured = CheckResult(MEASURED_CHECK, "FAIL", "1 finding BLOCKs", (f"{NAME}: BLOCK, accuracy -0.2",))
    assert _safe(measured_metadata(measured, None)["details"].value) == f"- {SHOWN}: BLOCK, accuracy -0.2"


def test_the_rollback_plan_shows_a_model_name_as_text() -> None:
    plan = RollbackPlan(model=NAME, to_version="1", moves=(AliasMove("production", "2"),), kept=(), target=None,
                        safe=None, forced=False, by="ana", reason="", withdrawn={})
    lines = _safe(_metadata(RollbackResult(plan, applied=False, record=None))["plan"].value).split("\n")
    assert lines[0] == f"- move production of {SHOWN} from version 2 to version 1"


def test_the_scores_say_which_acknowledgements_were_ignored_and_why(tmp_path) -> None:  # noqa: ANN001
    """An acknowledgement the scan set aside (a forged document, one too long) is named beside the scores, so
    an operator reading the Dagster UI sees that its findings count."""
    from recall_dagster.acks.model import Acknowledgement
    from recall_dagster.acks.trust import AckBook, Ignored
    from recall_dagster.defs.resources import RecallResource
    from recall_dagster.defs.scan import _scored
    from recall_dagster.scan import Read as Closures
    from recall_dagster.detect.catalogue import Detection
    from recall_dagster.settings import Settings

    forged = Acknowledgement.make("pii_exposure", "urn:li:dataset:x", None, ["f"], "trust me", f"mallory{NAME}", 0, 1)
    closures = Closures(0, "graph.db", (), True, acks=AckBook(ignored=(Ignored(forged, "no signature"),)))
    recall = RecallResource.from_settings(Settings.under(tmp_path))
    scores, _ = _scored(closures, Detection({}, ()), recall, "no_model_at_fail_tier")
    said = scores.metadata["acknowledgements_ignored"].value
    assert said.startswith(f"{forged.id} by mallory") and said.endswith(": no signature")
    assert "\x1b" not in said and "\u202e" not in said


def test_each_model_s_verdict_is_a_line_in_the_scores_table_not_behind_a_click(tmp_path) -> None:  # noqa: ANN001
    """What an operator reads in the asset's table: the scan in one line, and each model with findings its tier,
    top reason and next step, as text (Markdown sits behind "[Show Markdown]"); graph text is shown, not obeyed."""
    from recall_dagster.defs.resources import RecallResource
    from recall_dagster.defs.scan import _scored, _summary
    from recall_dagster.scan import Read as Closures
    from recall_dagster.detect.catalogue import Detection
    from recall_dagster.estate import ModelClosure
    from recall_dagster.estate.views import Model
    from recall_dagster.settings import Settings

    sick, well = (ModelClosure(Model(f"urn:li:mlModel:(urn:li:dataPlatform:mlflow,{n},PROD)", n), True)
                  for n in ("fraud_1", "churn_1"))
    failing = Finding("failing_assertion", Severity.CRITICAL, "urn:li:assertion:a",
                      f"assertion not_null on {NAME}.price failed in its latest run (4,073 failing rows)")
    owner = Finding("ownership_vacuum", Severity.WARN, "urn:li:dataset:o", "nobody owns orders")
    closures = Closures(0, "graph.db", (sick, well), True)
    recall = RecallResource.from_settings(Settings.under(tmp_path))
    scores, _ = _scored(closures, Detection({sick.urn: (owner, failing)}, ()), recall, "no_model_at_fail_tier")
    shown_in_table = {key: value.value for key, value in scores.metadata.items() if isinstance(value.value, str)}
    assert shown_in_table["summary"] == "2 model(s) scanned, none at CRITICAL; worst AT_RISK"
    assert _summary(scores.value, ["fraud_1"], "CRITICAL") == "1 of 2 model(s) at CRITICAL: fraud_1"
    verdict = shown_in_table["verdict: fraud_1"]
    assert verdict.startswith("AT_RISK ") and "assertion not_null on orders" in verdict, verdict
    assert verdict.endswith("(+1 more). Next: Fix the data the failing test names and rerun the test before the "
                            "next retrain."), "the worst finding leads, the next step follows"
    assert "\x1b" not in verdict and "\u202e" not in verdict
    assert "verdict: churn_1" not in shown_in_table, "a model with nothing to say adds no line"
