"""A dataset where many inputs converge feeds a production model, and nobody wrote down what it means.

Fan-in is the number of distinct upstream datasets a dataset is built from:
the tables where most logic concentrates, and the first place an on-call
engineer must understand.  A description or a dataset-level glossary term is
enough documentation.
"""

from __future__ import annotations

from recall_dagster.detect.config import RecallConfig
from recall_dagster.detect.finding import Finding, finding
from recall_dagster.detect.state import DetectorState
from recall_dagster.estate import ModelClosure

NAME = "undocumented_critical_path"
CASES = ("undocumented",)


def detect(closure: ModelClosure, config: RecallConfig, state: DetectorState) -> list[Finding]:
    if not closure.production:
        return []
    findings: list[Finding] = []
    for urn, dataset in sorted(closure.datasets.items()):
        fan_in = len(dataset.upstreams)
        if dataset.missing or fan_in < config.min_fan_in:
            continue
        if any(d.description or d.terms for d in closure.same_table(urn)):
            continue
        findings.append(
            finding(
                closure,
                NAME,
                config.severity(NAME, "undocumented"),
                urn,
                f"{dataset.name} merges {fan_in} upstream datasets into production model "
                f"{closure.model.name} but has neither a description nor a glossary term",
                cause=urn,
                fan_in=fan_in,
            )
        )
    return findings
