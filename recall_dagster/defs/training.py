"""One asset per registry model that trains, logs and registers it in MLflow, behind a blocking gate.

Dagster evaluates an ordinary asset check *after* its asset materializes, too
late to stop a retrain. So the gate is a blocking check the training asset
evaluates first, in its own step: on NO-GO it reports the failed check and
does not train, and Dagster fails the step and skips everything downstream.
The verdict is ``recall gate``'s (:func:`recall_dagster.lifecycle.evaluate_gate`):
the same named checks, the scan's risk tier among them.

dagster-mlflow is not used: its resource opens one fluent MLflow run per
Dagster run and sets a process-global tracking URI, while ``train_model``
records each model in its own run through an explicit client. An umbrella run
would appear in DataHub as a training run that trained nothing.
"""

import time
from typing import Any, Iterator

from dagster import (
    AssetCheckKey,
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    AssetSpec,
    Failure,
    MaterializeResult,
    MetadataValue,
    multi_asset,
)
from dagster_dbt import get_asset_key_for_model

from ml_models.query import build_training_query
from ml_models.registry import FeatureRegistry, ModelSpec
from recall_dagster.defs.resources import RecallResource
from recall_dagster.lifecycle.config import load_lifecycle_config
from recall_dagster.lifecycle.gate import GateResult
from recall_dagster.lifecycle.rows import warehouse_counter
from recall_dagster.lifecycle.service import evaluate_gate
from recall_dagster.ingest.enrich import model_version_urn
from recall_dagster.progress import Progress
from recall_dagster.detect import Severity
from recall_dagster.scan import JsonStateStore
from recall_dagster.scan_markdown import checks_table, findings_table
from seed.lifecycle import EstateState, train_and_deploy

GROUP = "training"
GATE = "retrain_gate"


def training_key(spec: ModelSpec) -> AssetKey:
    return AssetKey(["ml", spec.name])


def training_asset(spec: ModelSpec, registry: FeatureRegistry, dbt: AssetsDefinition) -> AssetsDefinition:
    """The model's training, downstream of the dbt models its training query reads."""
    key = training_key(spec)
    reads = build_training_query(spec, registry).reads
    gate = AssetCheckKey(key, GATE)

    @multi_asset(
        name=f"train_{spec.name}",
        specs=[
            AssetSpec(
                key,
                deps=[get_asset_key_for_model([dbt], read.table.name) for read in reads],
                group_name=GROUP,
                description=spec.description,
                kinds={"mlflow", "scikitlearn"},
                metadata={"registered_name": spec.registered_name, "alias": spec.alias},
                skippable=True,  # a refused retrain materializes nothing
            )
        ],
        check_specs=[
            AssetCheckSpec(
                GATE,
                asset=key,
                blocking=True,
                description=(
                    "Refuses the retrain when the version the alias serves reaches the scan's fail tier "
                    "or a dataset it trains on fails an assertion."
                ),
            )
        ],
        can_subset=True,
    )
    def train(context: AssetExecutionContext, recall: RecallResource) -> Iterator[Any]:
        verdict = judge(recall, spec, registry)
        go = isinstance(verdict, str) or verdict.go
        if gate in context.selected_asset_check_keys:
            yield AssetCheckResult(
                asset_key=key,
                check_name=GATE,
                passed=go,
                severity=AssetCheckSeverity.ERROR,
                metadata=verdict_metadata(verdict),
            )
        elif not go:
            failing = "; ".join(f"{c.name}: {c.summary}" for c in verdict.failing)  # type: ignore[union-attr]
            raise Failure(f"retrain of {spec.name} refused: {failing}", metadata=verdict_metadata(verdict))
        if go and key in context.selected_asset_keys:
            yield MaterializeResult(asset_key=key, metadata=_train(recall, spec, registry))

    return train


def judge(recall: RecallResource, spec: ModelSpec, registry: FeatureRegistry) -> GateResult | str:
    """``recall gate`` on the version the model's alias serves; a string says why there is nothing to judge yet."""
    version = recall.aliased_version(spec.registered_name, spec.alias)
    if version is None:
        return f"{spec.registered_name} has no version under alias {spec.alias!r} yet"
    urn = model_version_urn(registry, spec.registered_name, version)
    settings = recall.settings()
    # The gate reads the schema baselines the scans keep but never records one: a retrain refused
    # on a broken estate must not make the broken schema the norm the healed one is compared with.
    baselines = JsonStateStore(settings.state_dir).load_baselines()
    with recall.open_graph() as graph:
        if not graph.get_aspects([urn]).get(urn):
            return f"{spec.registered_name} v{version} is not in the metadata graph yet"
        return evaluate_gate(
            graph,
            recall.config(),
            load_lifecycle_config(recall.home.config_path or None),
            urn,
            int(time.time() * 1000),
            baselines=baselines,
            row_counter=warehouse_counter(settings),
        )


def verdict_metadata(verdict: GateResult | str) -> dict[str, Any]:
    """What the UI shows on the check: the verdict, every named check, and the findings to fix first."""
    if isinstance(verdict, str):
        return {"verdict": "GO", "reasons": MetadataValue.md(f"- {verdict}")}
    metadata: dict[str, Any] = {
        "verdict": "GO" if verdict.go else "NO-GO",
        "model_version": verdict.model,
        "failing_checks": ", ".join(c.name for c in verdict.failing) or "none",
        "checks": MetadataValue.md(checks_table(verdict)),
    }
    critical = tuple(f for f in verdict.findings if f.severity is Severity.CRITICAL)
    if critical:
        metadata["critical_findings"] = MetadataValue.md(findings_table(critical))
    return metadata


def _train(recall: RecallResource, spec: ModelSpec, registry: FeatureRegistry) -> dict[str, Any]:
    """Train through the estate's own step, then read back what MLflow recorded for the asset's metadata."""
    settings = recall.settings()
    version = train_and_deploy(
        settings, recall.ensure_warehouse(), registry, EstateState(settings), Progress(quiet=True), models=(spec.name,)
    )[spec.name]
    client = recall.mlflow_client()
    run_id = client.get_model_version(spec.registered_name, str(version)).run_id
    metrics = client.get_run(run_id).data.metrics
    return {
        "registered_name": spec.registered_name,
        "version": version,
        "alias": spec.alias,
        "mlflow_run_id": run_id,
        **{f"metric.{k}": float(v) for k, v in sorted(metrics.items()) if not k.startswith("table_rows.")},
    }
