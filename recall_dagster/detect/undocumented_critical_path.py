"""A dataset where many inputs converge feeds a production model, and nobody wrote down what it means.

Fan-in is the number of distinct upstream tables a table is built from
(:meth:`~recall_dagster.estate.closure.ModelClosure.upstream_tables`: twins are
one table, so a view's own dbt node never counts): the tables where most logic
concentrates, and the first place an on-call engineer must understand.  A
description or a dataset-level glossary term on any of its twins is enough
documentation.  Each table is judged once, named by its canonical twin.
"""

from __future__ import annotations

from recall_dagster.detect.config import ScanConfig
from recall_dagster.detect.finding import Finding, finding
from recall_dagster.detect.state import DetectorState
from recall_dagster.estate import ModelClosure
from recall_dagster.detect.declared import Detector

NAME = "undocumented_critical_path"
CASES = ("undocumented",)


def detect(closure: ModelClosure, config: ScanConfig, state: DetectorState) -> list[Finding]:
    if not closure.production:
        return []
    findings: list[Finding] = []
    judged: set[str] = set()
    for urn in sorted(closure.datasets):
        table = closure.canonical(urn)
        if table in judged:
            continue
        judged.add(table)
        fan_in = len(closure.upstream_tables(urn))
        if fan_in < config.min_fan_in or any(d.description or d.terms for d in closure.same_table(urn)):
            continue
        subject = table if table in closure.datasets else urn  # its canonical twin, unless beyond the walk
        findings.append(
            finding(
                closure,
                NAME,
                config.severity(NAME, "undocumented"),
                subject,
                f"{closure.dataset(subject).name} merges {fan_in} upstream datasets into production model "
                f"{closure.model.name} but has neither a description nor a glossary term",
                cause=subject,
                fan_in=fan_in,
            )
        )
    return findings


DETECTOR = Detector(NAME, detect, CASES)
