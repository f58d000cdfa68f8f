"""The lifecycle's entry points: read the graph once, run the pure core, act.

The CLI (``recall blind-window``, ``recall gate``, ``recall incidents sync``)
and the Dagster definitions (the ``blind_window`` asset, the blocking gate
check on each training asset, the dbt-failure sensor) call these same
functions; time always comes in as ``now_ms``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial
from typing import Iterable, Mapping, Sequence

from recall_dagster.acks.model import Acknowledgement, split
from recall_dagster.acks.service import in_force
from recall_dagster.contracts import lifecycle as contracts
from recall_dagster.contracts.base import VERSION, UnlinkedAssertion
from recall_dagster.detect import ScanConfig
from recall_dagster.detect.state import SchemaBaseline
from recall_dagster.errors import ConfigError, ModelNotFound
from recall_dagster.estate import ModelClosure
from recall_dagster.estate.lookup import one_table, table_named
from recall_dagster.estate.select import version_retrain_replaces
from recall_dagster.graph.port import MetadataGraph
from recall_dagster.lifecycle.assess import RootCause, root_causes
from recall_dagster.lifecycle.config import LifecycleConfig
from recall_dagster.lifecycle.retrain_gate import GateInputs, GateResult, run_gate, training_data
from recall_dagster.lifecycle.incidents import IncidentEntry, matches, reconcile
from recall_dagster.lifecycle.ledger import Ledger
from recall_dagster.lifecycle.postmortem import Postmortem, postmortem
from recall_dagster.lifecycle.publish import postmortem_urn, publish, write_evidence
from recall_dagster.lifecycle.read import (
    read_assertions,
    read_estate,
    read_open_incidents,
    read_profile_rows,
    read_training_spans,
    relation,
    unlinked_failures,
)
from recall_dagster.lifecycle.records import AssertionRecord, Estate, TrainingSpan, newest_run
from recall_dagster.lifecycle.observed import Observed, observed_inputs
from recall_dagster.lifecycle.rows import RowCounter, sql_row_counter
from recall_dagster.lifecycle.verdict import Status
from recall_dagster.narrate import window_paragraph
from recall_dagster.kept.baselines import JsonStateStore
from recall_dagster.scan import Measure, judged
from recall_dagster.instants import iso_instant
from recall_dagster.settings import Settings
from recall_dagster.writeback.config import RetryPolicy
from recall_dagster.writeback.store import WritebackStore



@dataclass(frozen=True)
class Assessment:
    """The graph as the lifecycle sees it at one instant."""

    at_ms: int
    estate: Estate
    records: Sequence[AssertionRecord]
    spans: Mapping[str, tuple[TrainingSpan, ...]]
    causes: tuple[RootCause, ...]
    unlinked: tuple[AssertionRecord, ...] = ()  # failing now on data no model's closure reaches


def unlinked_failing(records: Sequence[AssertionRecord]) -> list[UnlinkedAssertion]:
    """Failing assertions tied to no model, as every lifecycle answer lists them."""
    return [UnlinkedAssertion(urn=r.urn, name=r.name, dataset=r.dataset,
                              result=r.latest.result if r.latest else None) for r in records]


def assess(graph: MetadataGraph, config: ScanConfig, lc: LifecycleConfig, now_ms: int) -> Assessment:
    """Every model version, every assertion's history, every training run, grouped into root causes, as they
    stood at ``now_ms``: a test run recorded after it is not yet known (``--as-of``)."""
    estate = read_estate(graph, config)
    records = [r.as_of(now_ms) for r in read_assertions(graph, estate, config.resolve.history_limit, lc.failing)]
    spans = read_training_spans(graph, estate.closures, lc.training_rows_metric)
    unlinked = unlinked_failures(graph, {r.urn for r in records}, lc.failing, now_ms, config.resolve.history_limit)
    return Assessment(now_ms, estate, records, spans, root_causes(records, estate, spans, lc), unlinked)


# -- blind window -------------------------------------------------------------------------------


@dataclass(frozen=True)
class BlindWindowReport:
    target: str | None
    judged_at_ms: int
    assertions: tuple[str, ...]  # the target's assertions with a failing run
    causes: tuple[RootCause, ...]
    unlinked: tuple[AssertionRecord, ...] = ()  # failing assertions (the target's, or any) that reach no model

    def _live(self, status: Status) -> tuple[str, ...]:
        return tuple(dict.fromkeys(
            v.name for c in self.causes for m in c.models for v in m.versions
            if v.verdict.status is status and v.serves
        ))

    @property
    def contaminated_live(self) -> tuple[str, ...]:
        """Names of CONTAMINATED versions serving right now: a live deployment's, or the production alias's."""
        return self._live(Status.CONTAMINATED)

    @property
    def unknown_live(self) -> tuple[str, ...]:
        """Names of live versions whose training time is unknown: neither cleared nor convicted."""
        return self._live(Status.UNKNOWN)

    @property
    def suspect_live(self) -> tuple[str, ...]:
        """Names of live versions trained inside a window on data the failure reaches only as a suspect."""
        return self._live(Status.SUSPECT)

    @property
    def coverage(self) -> contracts.BlindWindowCoverage:
        """How many judged versions had the training times a verdict needs, and why the others did not."""
        versions = {v.model: v for c in self.causes for m in c.models for v in m.versions}
        unknown = {v.name: v.verdict.reason for v in versions.values() if v.verdict.status is Status.UNKNOWN}
        return contracts.BlindWindowCoverage(versions=len(versions), judged=len(versions) - len(unknown),
                                             unknown=unknown, unlinked_failing=unlinked_failing(self.unlinked))

    def contract(self) -> contracts.BlindWindow:
        return contracts.BlindWindow(
            schema_version=VERSION,
            target=self.target,
            judged_at=iso_instant(self.judged_at_ms),
            assertions=list(self.assertions),
            contaminated_live=list(self.contaminated_live),
            unknown_live=list(self.unknown_live),
            suspect_live=list(self.suspect_live),
            coverage=self.coverage,
            causes=[_narrated(c.contract()) for c in self.causes],
        )


def _narrated(cause: contracts.Cause) -> contracts.NarratedCause:
    """A root cause as the blind window answers it: with the paragraph a person acts on, written from it. It
    takes what the cause was built with, whatever fields that is, so a field the cause gains reaches it."""
    given = {name: getattr(cause, name) for name in cause.model_fields_set}
    return contracts.NarratedCause(**given, narrative=window_paragraph(cause.as_json()))


def _targeted(
    graph: MetadataGraph, assessment: Assessment, target: str
) -> tuple[tuple[AssertionRecord, ...], tuple[AssertionRecord, ...]]:
    """The assertions ``target`` means, among those on data some model reads and among the failing ones no
    model's closure reaches: an assertion named by its URN, name or dbt test name (or ``unique_id``), else
    every assertion on the table a dataset name means (:func:`table_named`: any twin's URN or name, a suffix
    like ``marts.fct_orders``, a dbt node's ``unique_id``). A name nothing in the graph answers to is a
    :class:`ConfigError`; a table with no test is an answer (no blind window), as it is for impact."""
    linked = tuple(r for r in assessment.records if r.named(target))
    unlinked = tuple(r for r in assessment.unlinked if r.named(target))
    if linked or unlinked:
        return linked, unlinked
    columns = assessment.estate.columns
    table = table_named(graph, columns, target)
    if table is None:
        raise ConfigError(f"no assertion or dataset named {target!r} in the graph's catalog, and no failing "
                          "assertion of that name anywhere in the graph")
    return (tuple(r for r in assessment.records if columns.canonical.get(r.dataset, r.dataset) == table.urn),
            tuple(r for r in assessment.unlinked if one_table(graph, (r.dataset,)) == (table.urn,)))


def blind_window_report(
    graph: MetadataGraph, config: ScanConfig, lc: LifecycleConfig, target: str | None, now_ms: int
) -> BlindWindowReport:
    """The blind window and version verdicts for one dataset or assertion, or for every root cause (None); a
    failing assertion that reaches no model is an answer too (nothing trained on it), never "not found"."""
    assessment = assess(graph, config, lc, now_ms)
    if target is None:
        every = tuple(r.urn for c in assessment.causes for r in c.records)
        return BlindWindowReport(None, now_ms, every, assessment.causes, assessment.unlinked)
    targeted, unlinked = _targeted(graph, assessment, target)
    wanted = {r.urn for r in targeted}
    causes = tuple(c for c in assessment.causes if wanted & {r.urn for r in c.records})
    hit = tuple(r.urn for c in causes for r in c.records if r.urn in wanted)
    return BlindWindowReport(target, now_ms, hit, causes, unlinked)


# -- retrain gate ---------------------------------------------------------------------------------


def select_version(estate: Estate, model: str) -> ModelClosure:
    """The version a retrain of ``model`` replaces (:func:`version_retrain_replaces`): a URN, ``name/version`` or a name."""
    found = version_retrain_replaces(estate.closures, model)
    if found is None:
        known = sorted({c.registered_name for c in estate.closures})
        raise ModelNotFound(f"no registered model or version {model!r} in the graph; known: {', '.join(known) or 'none'}")
    return found


def _twins_of(closure: ModelClosure, urns: Iterable[str]) -> list[str]:
    tables = {closure.canonical(u) for u in urns}
    return sorted(u for u in closure.datasets if closure.canonical(u) in tables)


def evaluate_gate(
    graph: MetadataGraph,
    config: ScanConfig,
    lc: LifecycleConfig,
    model: str,
    now_ms: int,
    *,
    baselines: Mapping[str, SchemaBaseline],
    row_counter: RowCounter | None = None,
    measure: Measure | None = None,
    acks: Sequence[Acknowledgement] = (),
    observed: Sequence[Observed] = (),
) -> GateResult:
    """GO / NO-GO / UNVERIFIED for retraining ``model`` (a name means the version its production alias serves).

    Row counts now come from DataHub's dataset profiles, then from what the
    orchestrator ``observed`` (Dagster's ``dagster/row_count``), then from
    ``row_counter`` (the team's databases) for tables nobody profiles; an
    observation's write time is freshness too.  Schema baselines are read,
    not recorded: judging a retrain never accepts a schema change.  ``measure``
    replays the findings on the model (``measured_impact``), given.
    """
    assessment = assess(graph, config, lc, now_ms)
    closure = select_version(assessment.estate, model)
    span = newest_run(assessment.spans.get(closure.urn, ()))
    detection = judged([closure], config, baselines, measure=partial(measure, graph) if measure else None, acks=acks, at_ms=now_ms,
                       among=assessment.estate.closures, columns=lambda: assessment.estate.columns)
    part = split(closure, detection.findings.get(closure.urn, ()), acks, now_ms)
    findings = part.open
    twins = _twins_of(closure, closure.training_inputs)
    seen = observed_inputs(closure, closure.direct_inputs, observed)
    rows = read_profile_rows(graph, twins)
    for urn, observation in seen.items():
        if observation.rows is not None:
            rows.setdefault(relation(urn), observation.rows)
    missing = {t: [u for u in twins if relation(u) == t] for t in (span.table_rows if span else {}) if t not in rows}
    unmeasured = {t: "no DataHub profile and no row counter" for t in missing}
    if missing and row_counter is not None:
        counted = row_counter(missing)
        rows.update({t: n for t, n in counted.counts.items() if t in missing})
        unmeasured = {t: counted.skipped.get(t, "not counted") for t in missing if t not in rows}
    inputs = GateInputs(
        closure=closure,
        findings=findings,
        causes=assessment.causes,
        open_incidents=read_open_incidents(graph, _twins_of(closure, training_data(closure))),
        span=span,
        current_rows=rows,
        unmeasured_rows=unmeasured,
        columns=assessment.estate.columns,
        scan=config,
        config=lc,
        now_ms=now_ms,
        measured=measure is not None,
        accepted=part.accepted,
        observed=seen,
    )
    return run_gate(inputs)


def judge_retrain(
    graph: MetadataGraph,
    settings: Settings,
    config: ScanConfig,
    lc: LifecycleConfig,
    model: str,
    now_ms: int,
    measure: Measure | None = None,
    observed: Sequence[Observed] = (),
) -> GateResult:
    """:func:`evaluate_gate` as ``recall gate`` and the Dagster gate run it (with what Dagster ``observed``): the scans' schema baselines, read
    and never recorded (a retrain refused on a broken estate must not make the broken schema the norm),
    row counts from the connections in ``lifecycle.row_counts`` and the dbt profile, and the findings replayed
    on the model by ``measure`` (:func:`recall_dagster.impact.measured.mlflow_measure`), given; the
    acknowledgements in force (local and published) are honoured and named."""
    baselines = JsonStateStore(settings.state_dir).load_baselines()
    return evaluate_gate(
        graph, config, lc, model, now_ms, baselines=baselines,
        row_counter=sql_row_counter(tuple(lc.row_counts.items()), warehouse=lc.warehouse), measure=measure,
        acks=in_force(graph, settings, config.acknowledgements).honoured, observed=observed,
    )


# -- incident lifecycle -----------------------------------------------------------------------------


@dataclass(frozen=True)
class SyncResult:
    raised: tuple[IncidentEntry, ...]
    updated: tuple[IncidentEntry, ...]
    resolved: tuple[IncidentEntry, ...]
    active: tuple[IncidentEntry, ...]  # every incident open after the sync
    failures: tuple[str, ...]  # writes that did not land; retried on the next sync
    unlinked: tuple[AssertionRecord, ...] = ()  # failing assertions no model's closure reaches: no incident, said

    def contract(self) -> contracts.IncidentSync:
        def brief(e: IncidentEntry) -> contracts.IncidentBrief:
            """An incident from its snapshot, which may have been kept by an older Recall."""
            blast = e.snapshot.get("blast_radius", {})
            return contracts.IncidentBrief(
                id=e.id,
                urn=e.urn,
                state=e.state,
                severity=blast.get("severity"),
                tests=[a["name"] for a in e.snapshot.get("assertions", ())],
                models=[
                    contracts.IncidentModel(
                        name=m["name"],
                        summary=m["summary"],
                        severity=m["severity"],
                        failed_rows=m["failed_rows"],
                        measured=m.get("measured", []),  # an incident kept before measurements were named
                        live_deployments=m["live_deployments"],
                        suspect=[f["name"] for f in m.get("suspect_features", ())],
                        reach=m.get("reach", "confirmed"),  # an incident kept before reach was named
                    )
                    for m in blast.get("models", ())
                ],
                postmortem=dict(e.postmortem) if e.postmortem else None,
            )

        return contracts.IncidentSync(
            schema_version=VERSION,
            raised=[brief(e) for e in self.raised],
            updated=[brief(e) for e in self.updated],
            resolved=[brief(e) for e in self.resolved],
            active=[brief(e) for e in self.active],
            failures=list(self.failures),
            unlinked_failing=unlinked_failing(self.unlinked),
        )


def sync_incidents(
    graph: MetadataGraph,
    settings: Settings,
    config: ScanConfig,
    lc: LifecycleConfig,
    now_ms: int,
    policy: RetryPolicy,
) -> SyncResult:
    """Raise, update and resolve incidents so they match the tests now; write postmortems on resolution.

    The ledger is saved before anything is sent and again after, so a crash or
    an unreachable server costs nothing: what did not land is sent next time.
    """
    ledger = Ledger(settings.state_dir, graph.location)
    assessment = assess(graph, config, lc, now_ms)
    transition = reconcile(ledger.load(), assessment.causes, now_ms)
    entries = dict(transition.entries)
    postmortems: dict[str, Postmortem] = {}
    for entry in (e for e in entries.values() if not e.active and not e.published):
        pm = postmortem(entry, next((c for c in assessment.causes if matches(entry, c)), None), lc)
        files = write_evidence(settings.evidence_dir, entry, pm)
        written = {"document": postmortem_urn(entry), "title": pm.title, "files": files}
        entries[entry.id] = replace(entry, postmortem=written)
        postmortems[entry.id] = pm
    ledger.save(entries)
    unpublished = [e for e in entries.values() if not e.published]
    outcome = publish(graph, unpublished, postmortems, lc, policy, WritebackStore(settings.state_dir, graph.location))
    for entry in unpublished:
        document = postmortem_urn(entry) if entry.id in postmortems else None
        if entry.urn in outcome.landed and (document is None or document in outcome.landed):
            entries[entry.id] = replace(entries[entry.id], published=True)
    ledger.save(entries)
    def changed(kind: str) -> tuple[IncidentEntry, ...]:
        return tuple(entries[e.entry.id] for e in transition.events if e.kind == kind)

    return SyncResult(
        raised=changed("raised"),
        updated=changed("updated"),
        resolved=changed("resolved"),
        active=tuple(e for e in entries.values() if e.active),
        failures=tuple(outcome.failures),
        unlinked=assessment.unlinked,
    )



def list_incidents(settings: Settings, location: str) -> contracts.IncidentList:
    """The incidents the ledger holds for the graph at ``location``, open ones first (``recall incidents list``)."""
    entries = sorted(Ledger(settings.state_dir, location).load().values(), key=lambda e: (not e.active, -e.raised_at_ms))
    return contracts.IncidentList(schema_version=VERSION, incidents=[e.contract() for e in entries])
