"""``recall gate``, ``recall blind-window`` and ``recall incidents sync|list``: the incident lifecycle's answers."""

from __future__ import annotations

from typing import Literal

from recall_dagster.contracts.base import Contract, Instant, Json, Part, UnlinkedAssertion
from recall_dagster.severity import Severity


class Check(Part):
    name: str
    status: Literal["PASS", "WARN", "FAIL", "SKIP"]  # WARN: a failing check lifecycle.gate.advisory names
    summary: str
    details: list[str]


class GateCoverage(Part):
    checks: int
    measured: int
    skipped: dict[str, str]  # check -> why it could not measure


class DagsterRun(Part):
    run_id: str
    url: str | None  # its page in the Dagster UI, when dagster.webserver_url is set


class Gate(Contract):
    model: str
    name: str
    registered_model: str
    judged_at: Instant
    verdict: Literal["GO", "NO-GO", "UNVERIFIED"]
    reason: str | None
    failing_checks: list[str]
    unverified_checks: list[str]
    coverage: GateCoverage
    checks: list[Check]
    acknowledged: list[Json]  # the acknowledgements the verdict relied on, with the findings they cover
    trained_by: DagsterRun | None = None  # the Dagster run that trained the version judged
    narrative: str  # the verdict as a person acts on it


class Window(Part):
    began_after: Instant | None
    began_by: Instant | None
    onset: Instant | None
    last_failed: Instant | None
    ended_by: Instant | None
    end: Instant | None
    open: bool
    untimed_runs: int
    likely_onset: Instant | None = None  # the newest change stamped after the last pass (an addition)


class AssertionHistory(Part):
    urn: str
    name: str
    dataset: str
    on: str
    kind: str | None
    failing: bool
    failed_rows: int | None
    measured: str | None = None  # what its newest failing run measured, when not failing rows (an addition)
    windows: list[Window]


class PoisonedFeature(Part):
    urn: str
    name: str
    column: str
    evidence: str
    lineage: list[str]


class ModelImpact(Part):
    urn: str
    name: str
    version: str | None
    group: str
    severity: str
    level: Severity | None = None  # where the band stands on the one ladder (an addition: older payloads lack it)
    poisoned_features: int
    total_features: int
    summary: str
    training_columns: int
    features: list[PoisonedFeature]  # confirmed: derived from the failing column
    suspect_features: list[PoisonedFeature]  # sharing only an origin column with it
    poisoned_inputs: list[str]
    live_deployments: list[str]
    production: bool
    failed_rows: int | None
    measured: list[str] = []  # what the tests weighed measured, when not failing rows (an addition)
    observed_by: list[str]
    table_reach: list[str] = []  # input columns reached by table lineage only (no column lineage): suspect
    reach: Literal["confirmed", "table", "suspect"] = "confirmed"  # how strongly the failure reaches it (an addition)
    reach_reason: str = ""  # the evidence that decided it (an addition)


class BlastRadius(Part):
    severity: str | None
    origins: list[str]
    poisoned_columns: list[str]
    models: list[ModelImpact]


class GateOverride(Part):
    by: str
    reason: str
    verdict: str | None  # the verdict it overrode


class Version(Part):
    urn: str
    name: str
    version: str | None
    verdict: Literal["CONTAMINATED", "SUSPECT", "UNKNOWN", "CLEAN"]  # SUSPECT: an addition
    reason: str
    training_run: str | None  # the run it was last fit on
    training_started: Instant | None
    training_ended: Instant | None
    training_runs: list[str]  # every run it records, each judged
    live_deployments: list[str]
    poisoned_inputs: list[str]
    gate_override: GateOverride | None = None  # trained past a refusing retrain gate
    trained_by: DagsterRun | None = None  # the Dagster run that trained it (dagster-mlflow's dagster_run_id tag)


class ModelVersions(Part):
    group: str
    name: str
    rollback: Version | None
    rollback_note: str
    versions: list[Version]  # newest first


class Cause(Part):
    origins: list[str]
    active: bool
    window: Window | None
    assertions: list[AssertionHistory]
    blast_radius: BlastRadius
    models: list[ModelVersions]


class NarratedCause(Cause):
    narrative: str  # when the data was bad, which versions learned from it, what to roll back to


class BlindWindowCoverage(Part):
    versions: int
    judged: int
    unknown: dict[str, str]  # version -> why its verdict is UNKNOWN
    unlinked_failing: list[UnlinkedAssertion] = []  # failing now on data no model's closure reaches


class BlindWindow(Contract):
    target: str | None
    judged_at: Instant
    assertions: list[str]
    contaminated_live: list[str]
    unknown_live: list[str]
    suspect_live: list[str] = []  # serving SUSPECT versions (an addition)
    coverage: BlindWindowCoverage
    causes: list[NarratedCause]


class IncidentModel(Part):
    name: str
    summary: str
    severity: str
    failed_rows: int | None
    measured: list[str] = []  # an addition: incidents kept before it lack it
    live_deployments: list[str]
    suspect: list[str]
    reach: Literal["confirmed", "table", "suspect"] = "confirmed"  # an addition: incidents kept before it lack it


class IncidentBrief(Part):
    id: str
    urn: str
    state: str
    severity: str | None
    tests: list[str]
    models: list[IncidentModel]
    postmortem: Json | None


class IncidentSync(Contract):
    raised: list[IncidentBrief]
    updated: list[IncidentBrief]
    resolved: list[IncidentBrief]
    active: list[IncidentBrief]
    failures: list[str]
    unlinked_failing: list[UnlinkedAssertion] = []  # failing assertions that reach no model: no incident, said


class Incident(Part):
    id: str
    urn: str
    state: str
    origins: list[list[str]]
    assertions: list[str]
    raised_at_ms: int
    updated_at_ms: int
    resolved_at_ms: int | None
    started_at_ms: int | None
    fingerprint: str
    snapshot: Json  # the root cause as it stood (the blind window's cause)
    timeline: list[Json]
    published: bool
    postmortem: Json | None


class IncidentList(Contract):
    incidents: list[Incident]  # open ones first


class AliasMove(Part):
    alias: str
    from_version: str | None  # the version the alias named before; None when it named none


class RollbackPlan(Part):
    model: str
    to_version: str
    moves: list[AliasMove]
    already: list[str]  # production aliases on the target already
    done: bool  # nothing left to move
    target: Version | None  # the target as the blind window judges it; None when the graph does not hold it
    safe_version: str | None  # the blind window's own choice: the newest version it clears
    forced: bool
    by: str
    reason: str
    withdrawn: dict[str, Version | None]  # each version an alias leaves, judged


class RollbackRecord(Part):
    model: str
    to_version: str
    by: str
    reason: str
    at: Instant
    moves: list[AliasMove]
    judged: str
    forced: bool
    dagster_run: str | None


class ScannedModel(Part):
    name: str
    version: str | None
    production: bool
    score: int
    tier: str
    findings: int


class AfterRollback(Part):
    served: dict[str, Version | None]  # production alias -> the version it names now, judged
    clean: bool
    contaminated_live: list[str]  # live deployments still serving a convicted version
    scan: list[ScannedModel]


class Rollback(Contract):
    """``recall rollback --json`` and the ``recall_rollback`` job's outcome."""

    applied: bool  # False: a dry run, nothing written
    plan: RollbackPlan
    record: RollbackRecord | None
    evidence: list[str]
    document: str | None
    writes: int
    failures: list[str]  # DataHub writes that did not land: the next run writes them
    after: AfterRollback | None

