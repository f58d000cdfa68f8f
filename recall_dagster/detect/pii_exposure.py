"""Personal data flows into a model that has not documented why it may use it.

PII is recognised by tag or glossary term (names in ``recall.yaml``) on a
dataset or any of its fields.  A model justifies its use with a configured tag
or a non-empty custom property, on the version or its registered model.
"""

from __future__ import annotations

from recall_dagster.detect.config import JustificationConfig, PiiConfig, ScanConfig
from recall_dagster.detect.finding import Finding, finding
from recall_dagster.detect.state import DetectorState
from recall_dagster.estate import Dataset, Model, ModelClosure, Term
from recall_dagster.detect.declared import Detector

NAME = "pii_exposure"
CASES = ("unjustified",)


def marks_pii(tags: tuple[str, ...], terms: tuple[Term, ...], pii: PiiConfig) -> bool:
    return any(t.casefold() in pii.folded_tags for t in tags) or any(
        t.name.casefold() in pii.folded_terms or t.urn.rsplit(":", 1)[-1].casefold() in pii.folded_terms
        for t in terms
    )


def justified(model: Model, justification: JustificationConfig) -> bool:
    return any(t.casefold() in justification.folded_tags for t in model.tags) or any(
        (model.properties.get(p) or "").strip() for p in justification.properties
    )


def _marked(dataset: Dataset, pii: PiiConfig) -> tuple[tuple[str, ...], bool] | None:
    """The dataset's PII columns, and whether the dataset as a whole is marked; None when it carries no PII."""
    columns = tuple(sorted(f.path for f in dataset.fields or () if marks_pii(f.tags, f.terms, pii)))
    whole = marks_pii(dataset.tags, dataset.terms, pii)
    return (columns, whole) if columns or whole else None


def detect(closure: ModelClosure, config: ScanConfig, state: DetectorState) -> list[Finding]:
    pii = config.pii
    if justified(closure.model, config.justification):
        return []
    findings: list[Finding] = []
    judged = state.memo.judgements(NAME, pii)
    judge = lambda dataset: _marked(dataset, pii)  # noqa: E731
    for urn, dataset, (columns, whole) in sorted(judged.over(closure.datasets, judge), key=lambda item: item[0]):
        what = f"PII columns {', '.join(columns)}" if columns else "PII"
        findings.append(
            finding(
                closure,
                NAME,
                config.severity(NAME, "unjustified"),
                urn,
                f"{dataset.name} carries {what} into {closure.model.name}, which records no PII "
                "justification",
                cause=urn,
                columns=list(columns),
                dataset_marked=whole,
            )
        )
    return findings


DETECTOR = Detector(NAME, detect, CASES)
