"""Recall's blocking retrain gate in front of any training asset a team already has.

:func:`retrain_gate` adds one asset upstream of the team's training asset
(their key, their registered model name) and changes nothing else about it.
The gate asset runs after everything the training reads, evaluates
``recall gate`` (:func:`recall_dagster.lifecycle.judge_retrain`) on the version
the model's production alias serves, and reports a **blocking** check: on
NO-GO, or UNVERIFIED while ``lifecycle.gate.block_unverified`` holds, Dagster
skips the training step and everything after it in the same run.

The team's own tests gate too: the latest executions of every asset check
upstream of the training asset (dbt tests among them, whichever job ran them)
are one more check of the verdict. A launched run (``dagster dev``, the daemon)
knows the whole code location; ``execute_in_process`` knows only its job, so
there the check sees the checks the job itself selects.
"""


from dataclasses import replace
from typing import Any, Iterator

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
    MaterializeResult,
    MetadataValue,
    multi_asset,
)
from dagster._core.definitions.assets.definition.assets_definition import stringify_asset_key_to_input_name
from dagster._core.definitions.assets.graph.base_asset_graph import BaseAssetGraph
from dagster_shared.check import CheckError

from recall_dagster.defs.resources import RecallResource
from recall_dagster.impact.measured import gate_measure
from recall_dagster.defs.translator import RecallTranslator
from recall_dagster.detect import Severity
from recall_dagster.errors import ModelNotFound
from recall_dagster.instants import clock_ms
from recall_dagster.lifecycle.gate import CheckResult, GateResult
from recall_dagster.lifecycle.service import judge_retrain
from recall_dagster.scan_markdown import checks_table, findings_table

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
    """``[gate, training]``: a blocking gate asset for ``model`` and the training asset, now downstream of it.

    ``model`` is the registered model's name as the registry (and so DataHub)
    knows it, or ``name/version`` to judge one version. ``key`` picks the
    training asset when ``training`` makes several.
    """
    names = translator or RecallTranslator()
    trained = _training_key(training, key)
    gate_key = names.gate_key(trained)
    spec = next(s for s in training.specs if s.key == trained)
    gate = _gate_asset(gate_key, trained, model, [d.asset_key for d in spec.deps], spec.group_name)
    return [gate, _downstream_of(training, trained, gate_key)]


def _downstream_of(training: AssetsDefinition, trained: AssetKey, gate_key: AssetKey) -> AssetsDefinition:
    """The training asset with the gate as one more upstream dependency, wired into its op.

    ``map_asset_specs`` adds the dependency and the op's input, but in Dagster
    1.13.27 it leaves ``keys_by_input_name`` without it, so a job would run the
    two steps in any order (measured); the input is mapped to the gate here.
    """
    mapped = training.map_asset_specs(
        lambda s: s.replace_attributes(deps=[*s.deps, AssetDep(gate_key)]) if s.key == trained else s
    )
    attributes = mapped.get_attributes_dict()
    attributes["keys_by_input_name"] = {
        **attributes["keys_by_input_name"], stringify_asset_key_to_input_name(gate_key): gate_key
    }
    return AssetsDefinition.dagster_internal_init(**attributes)


def _gate_asset(
    gate_key: AssetKey, trained: AssetKey, model: str, reads: list[AssetKey], group: str | None
) -> AssetsDefinition:
    @multi_asset(
        name=f"{'__'.join(gate_key.path)}",
        specs=[AssetSpec(gate_key, deps=reads, group_name=group, kinds={"datahub"},
                         description=f"Recall's retrain gate for {model}, in front of {trained.to_user_string()}.",
                         metadata={"registered_model": model, "gates": trained.to_user_string()})],
        check_specs=[
            AssetCheckSpec(
                GATE_CHECK, asset=gate_key, blocking=True,
                description=f"Refuses the retrain of {model} on NO-GO (and on UNVERIFIED unless recall.yaml allows it).",
            ),
            AssetCheckSpec(
                MEASURED_CHECK, asset=gate_key, blocking=True,
                description=f"Fails when a finding upstream of {model}, replayed on its served version, BLOCKs.",
            ),
        ],
    )
    def gate(context: AssetExecutionContext, recall: RecallResource) -> Iterator[Any]:
        verdict = _judge(recall, model)
        verdict = _with_upstream_checks(context, trained, verdict)
        allowed = verdict.go or (verdict.verdict == "UNVERIFIED" and not recall.lifecycle_config().gate.block_unverified)
        metadata = verdict_metadata(verdict)
        yield MaterializeResult(asset_key=gate_key, metadata=metadata)
        yield AssetCheckResult(
            asset_key=gate_key, check_name=GATE_CHECK, passed=allowed, severity=AssetCheckSeverity.ERROR,
            metadata=metadata,
        )
        measured = next((c for c in verdict.checks if c.name == MEASURED_CHECK), None)
        yield AssetCheckResult(
            asset_key=gate_key, check_name=MEASURED_CHECK, passed=measured is None or measured.status != "FAIL",
            severity=AssetCheckSeverity.ERROR,
            metadata={
                "status": measured.status if measured else "SKIP",
                "summary": measured.summary if measured else verdict.reason or "no version to judge",
                "details": MetadataValue.md("\n".join(f"- {d}" for d in measured.details) if measured else "-"),
            },
        )

    return gate


def _judge(recall: RecallResource, model: str) -> GateResult:
    now_ms = clock_ms()
    with recall.open_graph() as graph:
        try:
            settings, lc = recall.settings(), recall.lifecycle_config()
            measure = gate_measure(settings, lc, recall.impact_config())
            return judge_retrain(graph, settings, recall.config(), lc, model, now_ms, measure)
        except ModelNotFound as err:
            return GateResult.unverified(model, str(err), now_ms)


def _with_upstream_checks(context: AssetExecutionContext, trained: AssetKey, verdict: GateResult) -> GateResult:
    """The verdict with one more check: the newest execution of every asset check upstream of the training."""
    graph = _asset_graph(context)
    upstream = graph.get_ancestor_asset_keys(trained) - {trained}
    keys = sorted((k for k in graph.asset_check_keys if k.asset_key in upstream and k.name != GATE_CHECK),
                  key=AssetCheckKey.to_user_string)
    if not keys:
        check = CheckResult(UPSTREAM_CHECKS, "SKIP", "no asset check upstream of the training is known to this run")
        return replace(verdict, checks=(*verdict.checks, check))
    latest = context.instance.event_log_storage.get_latest_asset_check_execution_by_key(keys)
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


def _asset_graph(context: AssetExecutionContext) -> BaseAssetGraph:
    """The code location's asset graph in a launched run; the job's own in an in-process one, which has none."""
    try:
        return context.repository_def.asset_graph
    except CheckError:
        return context.job_def.asset_layer.asset_graph


def verdict_metadata(verdict: GateResult) -> dict[str, Any]:
    """What the UI shows on the gate: the verdict, every named check, and the findings to fix first."""
    metadata: dict[str, Any] = {
        "verdict": verdict.verdict,
        "model_version": verdict.model,
        "failing_checks": ", ".join(c.name for c in verdict.failing) or "none",
        "unverified_checks": ", ".join(c.name for c in verdict.unverified_checks) or "none",
    }
    if verdict.reason:
        metadata["reason"] = verdict.reason
    if verdict.checks:
        metadata["checks"] = MetadataValue.md(checks_table(verdict))
    critical = tuple(f for f in verdict.findings if f.severity is Severity.CRITICAL)
    if critical:
        metadata["critical_findings"] = MetadataValue.md(findings_table(critical))
    return metadata
