"""``recall impact``, ``recall diagnose``, ``recall protect`` and ``recall evidence``: measured and proven answers."""

from __future__ import annotations

from typing import Literal

from recall_dagster.contracts.base import Contract, Instant, Json, Part


class Record(Part):
    """Where the answer was kept: local evidence files first, then what reached the graph."""

    evidence: list[str]
    writes: int
    failures: list[str]


class ImpactResult(Part):
    model: str
    version: str | None
    model_urn: str
    feature: str | None
    verdict: str
    reason: str
    metric: str | None
    baseline: float | None
    mutated: float | None
    delta: float | None
    ci: list[float] | None
    loss: float | None
    flip_rate: float | None
    mean_abs_shift: float | None
    failures: int | None
    rows: int | None
    live_deployments: list[str]
    inputs: list[Json]


class Impact(Contract):
    dataset: str
    column: str
    mutation: str
    fraction: float | None
    verdict: Literal["PASS", "WARN", "BLOCK", "INCOMPLETE"]
    affected_models: int
    results: list[ImpactResult]
    record: Record | None = None  # the CLI's; the MCP tool keeps nothing


class MetricRow(Part):
    name: str
    baseline: float | None
    candidate: float | None
    delta: float | None
    tolerance: Json
    regressed: bool
    note: str


class MetricGate(Part):
    verdict: str
    metrics: list[MetricRow]
    primary: str | None
    loss: float | None
    reason: str


class Hypothesis(Part):
    kind: str
    score: float
    signals: list[Json]
    evidence: list[Json]
    counter: list[Json]


class Repair(Part):
    strategy: str
    description: str
    patch: str | None
    validated: bool
    metric: str | None
    metric_before: float | None
    metric_after: float | None
    reason: str
    tried: list[Json]


class DiagnosisRecord(Record):
    notified: list[str]
    notify_errors: list[str]


class Diagnosis(Contract):
    model: str
    candidate: str | None
    baseline: str | None
    gate: MetricGate
    verdict: Literal["PASS", "REGRESSION", "INCONCLUSIVE", "UNVERIFIED"]
    reason: str
    hypotheses: list[Hypothesis]  # ranked, best first
    repair: Repair | None  # the one to apply first
    alternatives: list[Repair]
    unverified: list[str]
    record: DiagnosisRecord | None = None


class Component(Part):
    name: str
    value: float
    weight: float
    why: str


class Reliability(Part):
    dataset: str
    name: str
    score: int
    models: list[str]
    components: list[Component]


class Gap(Part):
    column: str
    dataset: str
    models: list[str]
    live_deployments: int
    features: list[str]
    past_incident: bool


class Protect(Contract):
    assessed_at: Instant
    datasets: list[Reliability]
    gaps: list[Gap]  # untested columns on production paths, most exposed first
    top: int
    dbt_tests: str  # paste-ready YAML for the top gaps


class PersonalData(Part):
    columns: list[str]  # ``table.column`` marked personal, or the table's name when the whole table is marked
    justified: bool
    justification: list[str]


class EvidencePack(Contract):
    model: str
    judged: list[str]
    generated_at: Instant
    graph: str
    owners: list[str]
    data_sources: list[Json]
    quality_checks: list[Json]
    personal_data: PersonalData
    known_gaps: list[Gap]
    incidents: list[Json]
    versions: list[Json]
    files: list[str] = []  # the CLI's: where the pack was written
    failures: list[str] = []
