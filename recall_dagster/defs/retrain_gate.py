"""Recall's blocking retrain gate in front of any training asset a team already has.

:func:`retrain_gate` adds one asset upstream of the team's training asset
(their key, their registered model name) and changes nothing else about what
the training does. The gate asset runs after everything the training reads,
evaluates ``recall gate`` (:func:`recall_dagster.lifecycle.judge_retrain`) on
the version the model's production alias serves, and refuses by withholding
itself: on NO-GO, or UNVERIFIED while ``lifecycle.gate.block_unverified``
holds, the gate's check fails with the reason in one line, the gate asset is not
materialized (it is ``skippable``), and Dagster skips the training step and
everything after it in the same run. A refusal is a refusal, not a crash: the
run succeeds with the retrain skipped (its checks skipped, not failed), tagged
``recall/retrain_gate/<model>: NO-GO``, and the refusal is the run's error log
line. (A Dagster blocking check would fail the run with a framework stack
trace and mark the untrained asset and its checks failed.)

A run that materializes the training without the gate step (the UI's
"Materialize", ``dagster asset materialize``, a team's own job, automation, a
backfill's partitions) is judged all the same: the training step asks the same
function before it trains and fails on a refusal. A run tagged with who
(``recall/gate_override_by``) and why (``recall/gate_override_reason``) trains
past a refusal; the override is logged, kept on the materializations, and set
as tags on the MLflow versions the retrain registered
(:mod:`recall_dagster.lifecycle.override`).

The team's own tests gate too: the latest executions of every asset check
upstream of the training asset (dbt tests among them, whichever job ran them)
are one more check of the verdict. A launched run (``dagster dev``, the daemon)
knows the whole code location; ``execute_in_process`` knows only its job, so
there the check sees the checks the job itself selects.
"""


import inspect
from dataclasses import dataclass, replace
from functools import wraps
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence, TypeVar

from dagster import (
    AssetCheckKey,
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetDep,
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    AssetSpec,
    EventLogRecord,
    Failure,
    MaterializeResult,
    MetadataValue,
    PartitionsDefinition,
    multi_asset,
)

from recall_dagster.defs._compat import (
    asset_graph_of,
    compute_fn_of,
    freshness_window_hours,
    latest_check_executions,
    with_compute_and_input,
)
from recall_dagster.defs.model_verdict import VERDICT_CHECK, record_verdict, verdict_check
from recall_dagster.defs.resources import RecallResource
from recall_dagster.impact.measured import mlflow_measure
from recall_dagster.defs.translator import RecallTranslator
from recall_dagster.detect import Severity
from recall_dagster.errors import ConfigError, GraphError, ModelNotFound, RecallError
from recall_dagster.mlflow_registry import failing, sqlite_store, tag_versions, unreachable, version_numbers
from recall_dagster.clock import clock_ms
from recall_dagster.lifecycle.retrain_gate import CheckResult, GateResult
from recall_dagster.lifecycle.override import (
    OVERRIDE_BY_TAG,
    OVERRIDE_REASON_TAG,
    GateDecision,
    GateOverride,
    decide,
)
from recall_dagster.estate.naming import model_name
from recall_dagster.lifecycle.observed import Observed
from recall_dagster.lifecycle.service import judge_retrain
from recall_dagster.markdown import md_list
from recall_dagster.scan_markdown import check_details, checks_table, findings_table
from recall_dagster.shown import shown
from recall_dagster.instants import seconds_ms

if TYPE_CHECKING:
    from mlflow import MlflowClient

T = TypeVar("T")
RESOURCE = "recall"
RUN_TAG_PREFIX = "recall/retrain_gate/"
GATE_CHECK = "retrain_gate"
UPSTREAM_CHECKS = "upstream_asset_checks"
MEASURED_CHECK = "measured_impact"


def _training_key(training: AssetsDefinition, key: AssetKey | None) -> AssetKey:
    if key is not None:
        if key not in training.keys:
            raise ValueError(f"{key.to_user_string()} is not an asset of {training.node_def.name}")
        return key
    if len(training.keys) != 1:
        raise ValueError(f"{training.node_def.name} makes several assets: name the training one with key=")
    return next(iter(training.keys))


def retrain_gate(
    training: AssetsDefinition,
    model: str,
    *,
    key: AssetKey | None = None,
    translator: RecallTranslator | None = None,
) -> list[AssetsDefinition]:
    """``[gate, training, verdict]``: a blocking gate asset for ``model``, the training asset, now downstream of
    it, and Recall's verdict check on it (:mod:`recall_dagster.defs.model_verdict`).

    ``model`` is the registered model's name as the registry (and so DataHub)
    knows it, or ``name/version`` to judge one version. ``key`` picks the
    training asset when ``training`` makes several. The training asset also asks
    the gate itself in a run that does not hold the gate step (see
    :func:`_asking_gate`), so no way of launching it trains unjudged.
    """
    names = translator or RecallTranslator()
    trained = _training_key(training, key)
    spec = next(s for s in training.specs if s.key == trained)
    gate = retrain_gate_asset(spec, model, partitions=training.partitions_def, translator=names)
    return [gate, _asking_gate(training, trained, names.gate_key(trained), model), verdict_check(trained, model, names)]


def retrain_gate_asset(
    training: AssetSpec,
    model: str,
    *,
    partitions: PartitionsDefinition | None = None,
    translator: RecallTranslator | None = None,
) -> AssetsDefinition:
    """The gate asset alone, in front of the training ``training`` describes: for a training this code cannot
    wrap (one another Dagster component defines), which then lists the gate's key among its own deps.

    It runs after everything the training reads (but itself) and reports the same blocking checks as the gate
    :func:`retrain_gate` adds; without the wrap, a run that leaves the gate step out is not judged.
    """
    names = translator or RecallTranslator()
    gate_key = names.gate_key(training.key)
    reads = [d.asset_key for d in training.deps if d.asset_key != gate_key]
    return _gate_asset(gate_key, training.key, model, reads, training.group_name, partitions, names)


def _asking_gate(training: AssetsDefinition, trained: AssetKey, gate_key: AssetKey, model: str) -> AssetsDefinition:
    """The training asset downstream of the gate, whose step asks the gate before any training work.

    A run that holds the gate step has judged already (Dagster skips the
    training on a refusal); a run that does not (the UI's "Materialize", ``dagster
    asset materialize``, a team's job, automation) gets the same verdict from the
    same function here. Rebuilding the asset needs Dagster internals
    (:func:`~recall_dagster.defs._compat.with_compute_and_input` says why).
    """
    mapped = training.map_asset_specs(
        lambda s: s.replace_attributes(deps=[*s.deps, AssetDep(gate_key)]) if s.key == trained else s
    )
    train = compute_fn_of(mapped.node_def)
    if train is None:
        raise ValueError(f"{trained.to_user_string()} is computed by a graph: retrain_gate gates an asset of one op")
    asker = _GateAsker(trained, gate_key, model)
    return with_compute_and_input(mapped, _asking_first(train, asker), gate_key, (RESOURCE,))


def _asking_first(train: Callable[..., Any], asker: "_GateAsker") -> Callable[..., Any]:
    """``train`` behind the gate's question, of the same kind (function or generator) and signature."""
    if inspect.iscoroutinefunction(train) or inspect.isasyncgenfunction(train):
        raise ValueError(f"{train.__name__} is async: retrain_gate gates a synchronous training asset")
    if inspect.isgeneratorfunction(train):
        @wraps(train)
        def train_yielding(*args: Any, **kwargs: Any) -> Iterator[Any]:
            asked = asker.ask()
            yield from train(*args, **kwargs)
            asker.record(asked)
        return train_yielding

    @wraps(train)
    def train_returning(*args: Any, **kwargs: Any) -> Any:
        asked = asker.ask()
        result = train(*args, **kwargs)
        asker.record(asked)
        return result
    return train_returning


@dataclass(frozen=True)
class _Asked:
    """What the training step learnt from the gate, and the registry's versions before an override trained."""

    decision: GateDecision
    versions_before: frozenset[int] = frozenset()


@dataclass(frozen=True)
class _GateAsker:
    trained: AssetKey
    gate_key: AssetKey
    model: str

    def ask(self) -> _Asked | None:
        """The gate's decision for this run: the gate step's, when it ran in it, else judged here, refusing on NO-GO."""
        context = AssetExecutionContext.get()
        if self.trained not in context.selected_asset_keys:
            return None
        recall: RecallResource = getattr(context.resources, RESOURCE)
        judged = _judged_in_run(context, self.gate_key)
        if judged is None:
            verdict = _verdict(context, recall, self.model, self.trained, self.gate_key)
            decision = _decision(context, recall, verdict.verdict)
            metadata = {**verdict_metadata(verdict), **decision_metadata(decision)}
            _tag_run(context, self.model, decision)
            if not decision.allowed:
                context.log.error(_refusal(self.model, verdict))
                raise Failure(description=_refusal(self.model, verdict), metadata=metadata)
            how = "asked by the training step: the gate was not part of this run"
        else:
            decision = _decision(context, recall, judged)
            metadata = decision_metadata(decision)
            how = f"judged by {self.gate_key.to_user_string()} in this run"
        context.add_asset_metadata({"recall_gate": f"{decision.verdict} ({how})", **metadata}, asset_key=self.trained)
        if decision.override is None:
            context.log.info(f"Recall's gate: {decision.verdict} for {self.model} ({how})")
            return _Asked(decision)
        context.log.warning(f"{self.model}: {decision.override.describe()}")
        return _Asked(decision, _registered(recall, self.model, "before the overridden retrain"))

    def record(self, asked: _Asked | None) -> None:
        """Tag the versions an overridden retrain registered with who let it through and why."""
        if asked is None or asked.decision.override is None:
            return
        context = AssetExecutionContext.get()
        recall: RecallResource = getattr(context.resources, RESOURCE)
        name = registered_name(self.model)
        new = _registered(recall, self.model, "after the overridden retrain") - asked.versions_before
        tags = asked.decision.override.version_tags(context.run.run_id)
        _in_registry(recall, "marking the override", lambda client: tag_versions(client, name, new, tags))
        if new:
            context.log.warning(f"{name} version(s) {', '.join(map(str, sorted(new)))} marked in MLflow as "
                                f"{asked.decision.override.describe()}")
        else:
            context.log.warning(f"the overridden retrain registered no version of {name}: the override is recorded "
                                "on this materialization only")


def _registered(recall: RecallResource, model: str, doing: str) -> frozenset[int]:
    """The registry's versions of ``model``: none while its store does not exist yet (the very first training
    creates it), which an override of that first training records like any other."""
    store = sqlite_store(recall.settings().mlflow_uri)
    if store is not None and not store.exists():
        return frozenset()
    return _in_registry(recall, doing, lambda client: version_numbers(client, registered_name(model)))


def _in_registry(recall: RecallResource, doing: str, act: Callable[["MlflowClient"], T]) -> T:
    """``act`` on the registry, or a step failure naming the registry when it is missing or did not answer."""
    try:
        return act(recall.mlflow_client())
    except RecallError as err:
        raise Failure(description=f"{err} (while {doing})") from None
    except Exception as err:
        if failing(err):
            raise Failure(description=str(unreachable(recall.settings().mlflow_uri, doing, err))) from None
        raise


def registered_name(model: str) -> str:
    """The registered model a gate judges, as the registry names it (``name`` of ``name/version``, or a group
    URN's name); a version's URN says no registry name, so it stands as given."""
    return model_name(model).registered or model


def _judged_in_run(context: AssetExecutionContext, gate_key: AssetKey) -> str | None:
    """The verdict the gate step recorded in this run, if it ran in it (it runs first, being upstream).

    A newer materialization of the gate by another run hides this run's: then
    the training judges again, from the same evidence, rather than trust it.
    """
    records: Sequence[EventLogRecord] = context.instance.fetch_materializations(gate_key, limit=1).records
    [latest, *_] = [*records, None]
    if latest is None or latest.run_id != context.run.run_id or latest.asset_materialization is None:
        return None
    verdict = latest.asset_materialization.metadata.get("verdict")
    return str(verdict.value) if verdict is not None else None


def _verdict(
    context: AssetExecutionContext, recall: RecallResource, model: str, trained: AssetKey, gate_key: AssetKey,
) -> GateResult:
    """The gate's verdict on ``model``, with the team's checks upstream of ``trained`` (the gate's own left out)
    and what Dagster saw of its inputs: one function for both steps."""
    return _with_upstream_checks(context, trained, gate_key, _judge(recall, model, _observed(context, trained)))


def _decision(context: AssetExecutionContext, recall: RecallResource, verdict: str) -> GateDecision:
    try:
        override = GateOverride.from_tags(context.run.tags)
    except ConfigError as err:
        raise Failure(description=str(err)) from None
    return decide(verdict, recall.configuration().lifecycle.gate.block_unverified, override)


def _refusal(model: str, verdict: GateResult) -> str:
    return shown(f"Recall's retrain gate refuses to retrain {model}: {verdict.line}. "
                 f"To retrain anyway, launch the run with the tags {OVERRIDE_BY_TAG} and {OVERRIDE_REASON_TAG}.")


def decision_line(decision: GateDecision, verdict: GateResult) -> str:
    """The gate check's one line: the verdict and what refuses first, and who let the retrain past it."""
    if decision.override is None:
        return shown(verdict.line)
    return shown(f"{verdict.line}; {decision.override.describe()}")


def _tag_run(context: AssetExecutionContext, model: str, decision: GateDecision) -> None:
    """The verdict on the run itself, so the runs list shows (and filters) which retrains were refused or overridden."""
    value = decision.verdict if decision.override is None else f"{decision.verdict}, overridden by {decision.override.by}"
    context.instance.add_run_tags(context.run.run_id, {f"{RUN_TAG_PREFIX}{registered_name(model)}": value})


def decision_metadata(decision: GateDecision) -> dict[str, Any]:
    """What the UI shows of an override: who let the retrain past which verdict, and why."""
    if decision.override is None:
        return {}
    return {"gate_override_by": decision.override.by, "gate_override_reason": decision.override.reason,
            "gate_overridden_verdict": decision.verdict}


def _gate_asset(
    gate_key: AssetKey, trained: AssetKey, model: str, reads: list[AssetKey], group: str | None,
    partitions: PartitionsDefinition | None, names: RecallTranslator,
) -> AssetsDefinition:
    gate_check, measured_check = names.check_name(GATE_CHECK), names.check_name(MEASURED_CHECK)

    @multi_asset(
        name=f"{'__'.join(gate_key.path)}",
        specs=[AssetSpec(gate_key, deps=reads, group_name=group, kinds={"datahub"}, skippable=True,
                         description=f"Recall's retrain gate for {model}, in front of {trained.to_user_string()}: "
                                     "materialized when the retrain may go ahead, withheld when it is refused.",
                         metadata={"registered_model": model, "gates": trained.to_user_string()})],
        partitions_def=partitions,
        check_specs=[
            AssetCheckSpec(
                gate_check, asset=gate_key,
                description=f"Refuses the retrain of {model} on NO-GO (and on UNVERIFIED unless recall.yaml allows "
                            f"it): the gate withholds its materialization, so {trained.to_user_string()} and "
                            "everything after it in the run are skipped, not failed.",
            ),
            AssetCheckSpec(
                measured_check, asset=gate_key,
                description=f"Fails when a finding upstream of {model}, replayed on its served version, BLOCKs "
                            "(and so refuses the retrain).",
            ),
        ],
    )
    def gate(context: AssetExecutionContext, recall: RecallResource) -> Iterator[Any]:
        verdict = _verdict(context, recall, model, trained, gate_key)
        decision = _decision(context, recall, verdict.verdict)
        metadata = {**verdict_metadata(verdict), **decision_metadata(decision)}
        _tag_run(context, model, decision)
        if decision.override is not None:
            context.log.warning(f"{model}: {decision.override.describe()}")
        if decision.allowed:
            yield MaterializeResult(asset_key=gate_key, metadata=metadata)
        else:
            context.log.error(_refusal(model, verdict))
            _keep_verdict(context, recall, AssetCheckKey(trained, names.check_name(VERDICT_CHECK)), model)
        yield AssetCheckResult(
            asset_key=gate_key, check_name=gate_check, passed=decision.allowed, severity=AssetCheckSeverity.ERROR,
            description=decision_line(decision, verdict), metadata=metadata,
        )
        measured = next((c for c in verdict.checks if c.name == MEASURED_CHECK), None)
        blocks = measured is not None and measured.status == "FAIL"
        yield AssetCheckResult(
            asset_key=gate_key, check_name=measured_check, passed=not blocks or decision.override is not None,
            severity=AssetCheckSeverity.ERROR, description=measured_line(measured, verdict.reason),
            metadata={**measured_metadata(measured, verdict.reason), **decision_metadata(decision)},
        )

    return gate


def _keep_verdict(context: AssetExecutionContext, recall: RecallResource, key: AssetCheckKey, model: str) -> None:
    """The model's own verdict check, recorded now where the code location has it: the refused training's run
    skips it, and a skipped check would turn the model from red to grey."""
    if key in asset_graph_of(context).asset_check_keys:
        record_verdict(context.instance, recall, key, model)


def _judge(recall: RecallResource, model: str, observed: list[Observed]) -> GateResult:
    """The gate's verdict; a model or a graph that is not there yet (a team's first training, before its first
    ingestion) is UNVERIFIED with the reason, never a crash: nothing could be judged."""
    now_ms = clock_ms()
    try:
        with recall.open_graph() as graph:
            settings, loaded = recall.settings(), recall.configuration()
            measure = mlflow_measure(settings, loaded.lifecycle, loaded.impact)
            return judge_retrain(graph, settings, loaded.scan, loaded.lifecycle, model, now_ms, measure, observed)
    except (ModelNotFound, GraphError) as err:
        return GateResult.unverified(model, str(err), now_ms)


def _observed(context: AssetExecutionContext, trained: AssetKey) -> list[Observed]:
    """The last materialization of each asset the training reads: when it was written (freshness without
    DataHub operations), ``dagster/row_count`` when recorded, and the window of the freshness policy the asset
    declares, named by ``dagster/table_name`` (dagster-dbt sets it to the dbt relation), else by the asset
    key's parts."""
    graph = asset_graph_of(context)
    seen: list[Observed] = []
    for key in sorted(graph.get(trained).parent_keys, key=AssetKey.to_user_string):
        records: Sequence[EventLogRecord] = context.instance.fetch_materializations(key, limit=1).records
        [latest, *_] = [*records, None]
        if latest is None or latest.asset_materialization is None:
            continue
        table = graph.get(key).metadata.get("dagster/table_name")
        rows = latest.asset_materialization.metadata.get("dagster/row_count")
        seen.append(Observed(
            table=str(getattr(table, "value", table) or ".".join(key.path)),
            updated_ms=seconds_ms(latest.timestamp),
            rows=int(rows.value) if rows is not None and isinstance(rows.value, int) else None,
            source=f"Dagster asset {key.to_user_string()}, run {latest.run_id[:8]}",
            window_hours=freshness_window_hours(graph.get(key)),
        ))
    return seen


def _with_upstream_checks(
    context: AssetExecutionContext, trained: AssetKey, gate_key: AssetKey, verdict: GateResult,
) -> GateResult:
    """The verdict with one more check: the newest execution of every asset check upstream of the training,
    the gate's own checks left out."""
    graph = asset_graph_of(context)
    upstream = graph.get_ancestor_asset_keys(trained) - {trained, gate_key}
    keys = sorted((k for k in graph.asset_check_keys if k.asset_key in upstream),
                  key=AssetCheckKey.to_user_string)
    if not keys:
        check = CheckResult(UPSTREAM_CHECKS, "SKIP", "no asset check upstream of the training is known to this run")
        return replace(verdict, checks=(*verdict.checks, check))
    latest = latest_check_executions(context.instance, keys)
    failing, unknown = [], []
    for check_key in keys:
        record = latest.get(check_key)
        evaluation = record.event.asset_check_evaluation if record and record.event else None
        if evaluation is None:
            unknown.append(f"{check_key.to_user_string()}: never ran")
        elif not evaluation.passed and evaluation.severity == AssetCheckSeverity.ERROR:
            failing.append(f"{check_key.to_user_string()} failed")
    ran = len(keys) - len(unknown)
    if failing:
        check = CheckResult(UPSTREAM_CHECKS, "FAIL", f"{len(failing)} of {ran} upstream check(s) failing",
                            tuple(failing))
    elif ran:
        check = CheckResult(UPSTREAM_CHECKS, "PASS", f"{ran} upstream check(s) pass", tuple(unknown))
    else:
        check = CheckResult(UPSTREAM_CHECKS, "SKIP", f"none of {len(keys)} upstream check(s) has run", tuple(unknown))
    return replace(verdict, checks=(*verdict.checks, check))


def measured_line(measured: CheckResult | None, reason: str | None) -> str:
    """The measured-impact check's one line: its status and summary, else why no version could be judged."""
    if measured is None:
        return shown(f"SKIP: {reason or 'no version to judge'}")
    return shown(f"{measured.status}: {measured.summary}")


def measured_metadata(measured: CheckResult | None, reason: str | None) -> dict[str, Any]:
    """What the measured-impact check shows: its status, its summary (else why no version could be judged) and
    each replayed finding's result, the findings' text shown as text."""
    if measured is None:
        return {"status": "SKIP", "summary": shown(reason or "no version to judge"), "details": MetadataValue.md("-")}
    return {"status": measured.status, "summary": shown(measured.summary),
            "details": MetadataValue.md(md_list(measured.details))}


def verdict_metadata(verdict: GateResult) -> dict[str, Any]:
    """What the UI shows on the gate: the verdict, every named check, and the findings to fix first."""
    metadata: dict[str, Any] = {
        "summary": shown(verdict.line),
        "verdict": verdict.verdict,
        "model_version": verdict.model,
        "failing_checks": ", ".join(c.name for c in verdict.failing) or "none",
        "unverified_checks": ", ".join(c.name for c in verdict.unverified_checks) or "none",
    }
    if verdict.reason:
        metadata["reason"] = shown(verdict.reason)
    if verdict.trained_by is not None:  # relative: the run's page on whichever webserver shows this
        metadata["trained_by_run"] = MetadataValue.url(f"/runs/{verdict.trained_by.run_id}")
    if verdict.checks:
        metadata["checks"] = MetadataValue.md(checks_table(verdict))
        if details := check_details(verdict):
            metadata["check_details"] = MetadataValue.md(details)
    critical = tuple(f for f in verdict.findings if f.severity is Severity.CRITICAL)
    if critical:
        metadata["critical_findings"] = MetadataValue.md(findings_table(critical))
    return metadata
