"""``recall scan --json`` and the MCP ``scan_model`` tool."""

from __future__ import annotations

from typing import Literal

from recall_dagster.contracts.base import Contract, Instant, Json, Part, UnlinkedAssertion
from recall_dagster.severity import Severity


class Acknowledged(Part):
    id: str
    by: str
    reason: str
    until: Instant


class Finding(Part):
    detector: str
    severity: Severity
    subject: str  # the URN the message is about
    message: str
    evidence: Json  # always holds "path", model first
    cause: str | None  # the dataset at fault, when there is one
    acknowledged: Acknowledged | None  # set when an acknowledgement covers it: shown, not scored


class ModelReport(Part):
    urn: str
    name: str
    version: str | None
    production: bool
    score: int
    tier: str
    deployments: int
    live_deployments: list[str]
    findings: list[Finding]


class AtRisk(Part):
    dataset: str
    models: list[str]
    deployments: int
    flagged_by: list[str]


class Coverage(Part):
    models: dict[str, int]
    datasets: dict[str, int]
    unresolved_training_inputs: dict[str, list[str]] = {}  # model -> inputs naming no catalogued table
    uncatalogued_feature_sources: dict[str, list[str]] = {}  # model -> sources of object-store features never catalogued
    registered_without_production: list[str] = []  # registered models not judged: no version in production
    registered_unmarked: list[str] = []  # of those, the ones nothing marks at all (the scan exits 4)
    unlinked_failing: list[UnlinkedAssertion] = []  # failing assertions on data no scanned model reads


class IgnoredAcknowledgement(Part):
    id: str
    detector: str
    subject: str
    by: str
    why: str  # not signed by Recall nor written by a trusted author, or longer than acknowledgements.max_days


class Resolve(Part):
    mode: Literal["full", "incremental"]
    reason: str  # why a full read, when it was one
    changed_entities: int  # written since the last scan, when the graph could say
    models_reread: int
    models_reused: int  # closures taken from the last scan's snapshot


class Scan(Contract):
    scanned_at: Instant
    graph: str
    fail_tier: str
    models: list[ModelReport]  # highest score first; one entry per version
    blast_radius: list[AtRisk]
    coverage: Coverage
    ignored_acknowledgements: list[IgnoredAcknowledgement] = []  # read, not honoured: their findings count
    resolve: Resolve | None = None  # when the scan kept a snapshot of its closures (recall scan, the Dagster scan)
    writeback: Json | None = None  # with --writeback or --dry-run
