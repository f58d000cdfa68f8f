"""``write_back``: one scan's diagnosis into DataHub, local evidence first, every write accounted for.

The CLI's ``recall scan --write`` and the ``datahub_writeback`` asset both call
:func:`write_back`; ``--dry-run`` calls :func:`dry_run`.  The order is what
makes a failure cheap: evidence on disk, then read and plan, then emit with
retries, then remember what did not land and announce what changed.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Callable

from recall_dagster.errors import GraphError, ServiceUnreachable
from recall_dagster.graph.port import MetadataGraph
from recall_dagster.results import ScanResult
from recall_dagster.settings import Settings
from recall_dagster.writeback.config import WritebackConfig
from recall_dagster.writeback.emit import Outcome, emit
from recall_dagster.writeback.evidence import Evidence
from recall_dagster.writeback.incidents import targets_models
from recall_dagster.writeback.notify import channels, notify
from recall_dagster.writeback.plan import Plan, build_plan, run_id_of
from recall_dagster.writeback.report import WritebackReport
from recall_dagster.writeback.retry import RetryingReads
from recall_dagster.writeback.store import WritebackStore

INCIDENTS_ON_MODELS = "incident_on_mlModel"  # capability: the server accepts incidents targeting mlModels
OWNED_TAGGED = "owned_entities_tagged"  # every entity of Recall's in the graph carries the managed tag


def plan_writeback(
    graph: MetadataGraph,
    result: ScanResult,
    config: WritebackConfig,
    now_ms: int,
    store: WritebackStore,
    sleep: Callable[[float], None],
) -> Plan:
    """The plan against the graph as it is, aiming incidents where this server is known to take them,
    listing Recall's entities until a write-back has tagged them all, and leaving out the run events of a
    scan already written (they landed, or wait in ``pending``)."""
    on_models = store.capability(INCIDENTS_ON_MODELS) is not False
    reads = RetryingReads(graph, config.retry, sleep)
    plan = build_plan(reads, result, config, now_ms, incidents_on_models=on_models,
                      list_owned=store.capability(OWNED_TAGGED) is not True)
    sent = store.events_sent(result.scanned_at_ms)
    return replace(plan, writes=tuple(w for w in plan.writes if not (w.is_event and w.evaluation in sent)))


def dry_run(
    graph: MetadataGraph, result: ScanResult, settings: Settings, config: WritebackConfig, now_ms: int
) -> WritebackReport:
    """What :func:`write_back` would write now; nothing is written, not even evidence."""
    store = WritebackStore(settings.state_dir, graph.location)
    plan = plan_writeback(graph, result, config, now_ms, store, time.sleep)
    return WritebackReport(
        run_id=plan.run_id,
        graph=graph.location,
        evidence_dir=settings.evidence_dir / plan.run_id,
        plan=plan,
        carried_over=tuple(store.pending()),
        notes=plan.notes,
        dry_run=True,
    )


def reaim_incidents(
    graph: MetadataGraph,
    result: ScanResult,
    config: WritebackConfig,
    now_ms: int,
    outcome: Outcome,
    store: WritebackStore,
    sleep: Callable[[float], None],
) -> Outcome:
    """The server refused incidents on mlModels: remember that, and send them to the datasets at fault."""
    refused = {w.urn for w, _ in outcome.refused if w.path == "incident" and targets_models(w)}
    if not refused:
        return outcome
    store.save_capabilities({INCIDENTS_ON_MODELS: False})
    outcome.refused = [(w, r) for w, r in outcome.refused if w.urn not in refused]
    replanned = plan_writeback(graph, result, config, now_ms, store, sleep)
    reaimed = [w for w in replanned.writes if w.path == "incident" and w.urn in refused]
    second = emit(graph, reaimed, config.retry, sleep)
    outcome.merge(second)
    return outcome


def write_back(
    graph: MetadataGraph,
    result: ScanResult,
    settings: Settings,
    config: WritebackConfig,
    now_ms: int,
    *,
    sleep: Callable[[float], None] = time.sleep,
) -> WritebackReport:
    """Write one scan back into the graph; failures are reported, never raised mid-way.

    Returns the report; call :meth:`WritebackReport.raise_for_status` to fail
    when writes are still pending or the graph could not be read to plan (the
    CLI exits 3 then).  Raises only for what no retry fixes: a refused token,
    or evidence that cannot be written (``ConfigError``).
    """
    store = WritebackStore(settings.state_dir, graph.location)
    run_id = run_id_of(now_ms)
    evidence = Evidence(settings.evidence_dir, run_id)
    carried = store.pending()
    report = WritebackReport(run_id=run_id, graph=graph.location, evidence_dir=evidence.dir, plan=None)
    evidence.record_findings(result)
    evidence.record_report(result, report)
    try:
        plan = plan_writeback(graph, result, config, now_ms, store, sleep)
    except (ServiceUnreachable, GraphError) as err:  # still failing after retries: nothing to plan against
        unplanned = Outcome(unreachable=str(err), pending=[(w, str(err)) for w in carried])
        report = WritebackReport(run_id, graph.location, evidence.dir, plan=None, outcome=unplanned)
        evidence.record_outcome(result, report)
        return report
    evidence.record_plan(plan, carried)
    planned = WritebackReport(run_id, graph.location, evidence.dir, plan, carried_over=tuple(carried))
    evidence.record_report(result, planned)
    # Written ahead: a run that dies while emitting leaves this scan's events to be resent as they are (the
    # same timestamps, so GMS keeps one of each), never planned again with new ones.
    store.save_pending([*carried, *plan.writes])
    sent = store.events_sent(result.scanned_at_ms) | {w.evaluation for w in plan.writes if w.is_event}
    store.save_events_sent(result.scanned_at_ms, sent)
    outcome = emit(graph, [*carried, *plan.writes], config.retry, sleep)
    outcome = reaim_incidents(graph, result, config, now_ms, outcome, store, sleep)
    store.save_pending([w for w, _ in outcome.pending])
    if not (outcome.pending or outcome.refused or store.capability(OWNED_TAGGED)):  # all found now hold the tag
        store.save_capabilities({OWNED_TAGGED: True})
    failed = {w.key for w, _ in [*outcome.pending, *outcome.refused]}
    held = [w for w in plan.desired if w.path == "incident" and w.key not in failed]
    chans, channel_notes = channels(config)
    notices, memory = notify(held, chans, store.notified())
    store.save_notified(memory)
    report = WritebackReport(
        run_id=run_id,
        graph=graph.location,
        evidence_dir=evidence.dir,
        plan=plan,
        carried_over=tuple(carried),
        outcome=outcome,
        notices=tuple(notices),
        notes=(*plan.notes, *channel_notes),
    )
    evidence.record_outcome(result, report)
    return report
