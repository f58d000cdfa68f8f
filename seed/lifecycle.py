"""The demo estate's lifecycle: build it from nothing, break it, heal it, reset it.

Each step runs on the system it belongs to (Postgres, dbt, MLflow through its
tracking server, Feast, DataHub's ingestion) and skips what already exists, so a
second ``build`` reuses the warehouse, the data and the registered models and only
refreshes metadata.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Mapping

import pandas as pd
import sqlalchemy

from ml_models.registry import FeatureRegistry, load_registry
from recall_dagster.graph import ALIAS_READ_LIMITS, open_graph
from recall_dagster.mlflow_registry import read_registry
from recall_dagster.read_only_sql import sql_connection
from seed.ingest.enrich import dataset_urn
from seed.ingest.run import ingest_all
from recall_dagster.errors import StackError
from recall_dagster.files import read_json_object, write_json
from recall_dagster.progress import Progress
from recall_dagster.settings import REPO_ROOT, Settings
from seed.stack.dbt import (
    DbtRunSummary, dbt_artifacts, dbt_build, dbt_docs_generate, dbt_source_freshness, dbt_test_in_project,
)
from seed.stack.feast import feast_repo, serve_features
from seed.stack.profiles import profile_mcps
from seed.stack.tracking import ensure_tracking_server, stop_tracking_server
from seed.stack.warehouse import Warehouse, ensure_warehouse, stop_warehouse
from seed import injuries
from seed.generate import load_raw

DEMO_CONFIG = Path(__file__).with_name("recall.yaml")  # the demo's layer over Recall's defaults
ENTITY_TYPES = (
    "dataset", "schemaField", "assertion", "mlFeature", "mlFeatureTable", "mlPrimaryKey", "mlModel",
    "mlModelGroup", "mlModelDeployment", "dataProcessInstance", "glossaryTerm",
)


@dataclass
class EstateSummary:
    """What the demo built, read back from the systems themselves."""

    raw_rows: dict[str, int] = field(default_factory=dict)
    dbt: dict[str, dict[str, int]] = field(default_factory=dict)
    failing_tests: tuple[str, ...] = ()
    versions: list[tuple[str, int, tuple[str, ...]]] = field(default_factory=list)
    entities: dict[str, int] = field(default_factory=dict)


class EstateState:
    """The estate's own facts that no system records: the data's anchor time and what each endpoint runs."""

    def __init__(self, settings: Settings) -> None:
        self.path = settings.home / "estate" / "state.json"
        self.data: dict = read_json_object(self.path, "estate state")

    def save(self) -> None:
        write_json(self.path, self.data, "estate state")

    @property
    def deployed(self) -> dict[str, int]:
        return self.data.setdefault("deployed", {})


def build(settings: Settings, progress: Progress, scale: float | None = None) -> EstateSummary:
    """Build (or refresh) the healthy estate; idempotent."""
    settings.ensure_home()
    settings.mlflow_dir.mkdir(parents=True, exist_ok=True)
    settings.config_file.write_text(DEMO_CONFIG.read_text().replace("{project}", str(REPO_ROOT)))
    state = EstateState(settings)
    registry = load_registry()
    summary = EstateSummary()
    tracking = ensure_tracking_server(settings, wait=False)  # it readies its store while the warehouse loads
    with progress.step("warehouse (embedded PostgreSQL 16, or RECALL_WAREHOUSE_URL)"):
        warehouse = ensure_warehouse(settings)
        progress.note(warehouse.where)
        progress.note(f"MLflow tracking server {tracking}"
                      + ("" if settings.mlflow_tracking_uri else f" over {settings.mlflow_uri}"))
    if "anchor" not in state.data:
        with progress.step("raw layer: deterministic load"):
            summary.raw_rows = load_raw_layer(state, warehouse, scale)
            progress.note(f"scale {state.data['scale']}: " + ", ".join(f"{t} {n:,}" for t, n in summary.raw_rows.items()))
    result = run_dbt(settings, warehouse, progress)
    summary.dbt, summary.failing_tests = result.counts, result.failing_tests
    if not state.deployed:
        train_and_deploy(settings, registry, state, progress)
    summary.versions = publish(settings, warehouse, injuries.serving_registry(settings), state, progress)
    summary.entities = entity_counts(settings)
    return summary


SCENARIOS = ("injuries", "regression", "ambiguous", "bad_load")


def break_estate(settings: Settings, progress: Progress, scenario: str = "injuries") -> EstateSummary:
    """Inflict a scenario; a second call changes nothing.

    ``injuries``: DESIGN §6's normal Tuesday, each injury on its own system.
    ``regression``: a feature's code changes (a transform whose division has no
    zero guard) and fraud_detector is retrained on it; the new version is
    registered as a candidate, not promoted, as a metric gate would hold it.
    ``ambiguous``: the same code change, and in the same interval a vendor load
    that lost the same feature's values on a share of rows: two causes, equally
    well placed to explain the drop.
    ``bad_load``: the device vendor reloads its recent rows with the IP risk
    score in percent; the range test on the mart fails after the mart is
    rebuilt, and fraud_detector is retrained (a candidate, not promoted) on it.
    """
    state = _built_state(settings)
    if state.data.get("broken"):
        progress.note(f"the estate is already broken ({state.data.get('scenario', 'injuries')})")
        return _summary(settings)
    if scenario not in SCENARIOS:
        raise StackError(f"unknown scenario {scenario!r}; known: {', '.join(SCENARIOS)}")
    ensure_tracking_server(settings, wait=False)  # running since the build, or started again meanwhile
    warehouse = ensure_warehouse(settings)
    if scenario == "bad_load":
        with progress.step("warehouse: the device vendor reloads its recent rows in percent"):
            injuries.reload_in_percent(warehouse)
        run_dbt(settings, warehouse, progress)
        train_and_deploy(settings, load_registry(), state, progress, models=("fraud_detector",),
                         redeploy=False, promote=False)
        summary = _summary(settings, publish(settings, warehouse, injuries.serving_registry(settings), state, progress))
        _mark(state, scenario)
        return summary
    if scenario in ("regression", "ambiguous"):
        if scenario == "ambiguous":
            with progress.step("warehouse: a device-signal load without IP risk scores"):
                injuries.null_device_risk(warehouse)
            run_dbt(settings, warehouse, progress)
        with progress.step(f"training code: {injuries.REGRESSED_FEATURE} computed by {injuries.REGRESSED_TRANSFORM}"):
            injuries.change_feature_code(settings)
        train_and_deploy(settings, injuries.training_registry(settings), state, progress,
                         models=("fraud_detector",), redeploy=False, promote=False)
        summary = _summary(settings, publish(settings, warehouse, injuries.serving_registry(settings), state, progress))
        _mark(state, scenario)
        return summary
    registry = load_registry()
    with progress.step("warehouse: retype a column, add a card-number column, stop a feed, load NULL prices"):
        injuries.injure_warehouse(warehouse)
    result = run_dbt(settings, warehouse, progress)
    versions = train_and_deploy(settings, registry, state, progress, models=("fraud_detector",), redeploy=False)
    state.deployed["fraud-api-eu"] = versions["fraud_detector"]  # the EU endpoint auto-rolls; US lags behind
    with progress.step("feature store: half-finished device_signals → v2 migration in the Feast repository"):
        injuries.migrate_serving_registry(settings)
    summary = _summary(settings, publish(settings, warehouse, injuries.serving_registry(settings), state, progress))
    with progress.step("DataHub edits: v1 retired, an owner suspended, a column classified as PII"):
        injuries.write_metadata(settings, injuries.metadata_injuries(registry, hurt=True))
    _mark(state, scenario)
    summary.dbt, summary.failing_tests = result.counts, result.failing_tests
    return summary


def _mark(state: EstateState, scenario: str | None) -> None:
    state.data["broken"] = scenario is not None
    state.data["scenario"] = scenario
    state.save()


def heal(settings: Settings, progress: Progress) -> EstateSummary:
    """Repair what the scenario broke the same way it was made; the next scan stands down by itself."""
    state = _built_state(settings)
    if not state.data.get("broken"):
        progress.note("the estate is healthy")
        return _summary(settings)
    ensure_tracking_server(settings, wait=False)
    warehouse = ensure_warehouse(settings)
    registry = load_registry()
    if state.data.get("scenario") in ("regression", "ambiguous", "bad_load"):
        if state.data.get("scenario") in ("ambiguous", "bad_load"):
            with progress.step("warehouse: reload the raw layer as it was"):
                load_raw_layer(state, warehouse)
            run_dbt(settings, warehouse, progress)
        with progress.step("training code: the feature's v1 computation restored"):
            injuries.restore_feature_code(settings)
        train_and_deploy(settings, registry, state, progress, models=("fraud_detector",))
        summary = _summary(settings, publish(settings, warehouse, injuries.serving_registry(settings), state, progress))
        _mark(state, None)
        return summary
    with progress.step("warehouse: reload the raw layer as it was"):
        load_raw_layer(state, warehouse)
    result = run_dbt(settings, warehouse, progress)
    train_and_deploy(settings, registry, state, progress, models=("fraud_detector",))
    with progress.step("feature store: migration rolled back"):
        injuries.restore_serving_registry(settings)
    summary = _summary(settings, publish(settings, warehouse, registry, state, progress))
    with progress.step("DataHub edits undone"):
        injuries.write_metadata(settings, injuries.metadata_injuries(registry, hurt=False))
    _mark(state, None)
    summary.dbt, summary.failing_tests = result.counts, result.failing_tests
    return summary


def _built_state(settings: Settings) -> EstateState:
    state = EstateState(settings)
    if not state.deployed:
        raise StackError(f"no demo estate under {settings.home}: run `python -m seed build` first")
    return state


def _summary(settings: Settings, versions: list[tuple[str, int, tuple[str, ...]]] | None = None) -> EstateSummary:
    return EstateSummary(versions=versions or [], entities=entity_counts(settings))


def load_raw_layer(state: EstateState, warehouse: Warehouse, scale: float | None = None) -> dict[str, int]:
    """Load the raw layer at the estate's anchor, fixed by the first load, so a reload restores it exactly.

    The first load takes the current hour as the anchor and ``scale`` (else
    ``RECALL_SCALE``, else 1.0); later loads ignore ``scale`` and repeat it.
    """
    if "anchor" not in state.data:
        anchor = datetime.now(timezone.utc).replace(minute=0, second=0, microsecond=0)
        chosen = scale if scale is not None else float(os.environ.get("RECALL_SCALE", "1.0"))
        state.data.update(anchor=anchor.isoformat(), scale=chosen)
        state.save()
    return load_raw(warehouse, datetime.fromisoformat(state.data["anchor"]), scale=state.data["scale"])


def run_dbt(settings: Settings, warehouse: Warehouse, progress: Progress) -> DbtRunSummary:
    """The daily dbt run: build with tests, source freshness, the catalog DataHub reads, and table profiles."""
    with progress.step("dbt build (models and tests)"):
        result = dbt_build(settings, warehouse)
        progress.note(_counts_line(result))
    with progress.step("dbt source freshness and docs generate"):
        dbt_source_freshness(settings, warehouse)
        dbt_docs_generate(settings, warehouse)
    with progress.step("profile the warehouse tables → DataHub"):
        registry = load_registry()

        def urn_of(relation: str) -> str:
            return dataset_urn(registry, f"{registry.warehouse_database}.{relation}")

        injuries.write_metadata(settings, profile_mcps(warehouse, urn_of, int(time.time() * 1000)))
    return result


def train_and_deploy(
    settings: Settings, registry: FeatureRegistry, state: EstateState, progress: Progress,
    models: tuple[str, ...] | None = None, redeploy: bool = True, promote: bool = True,
) -> dict[str, int]:
    """Train each model through the demo location's training assets in one Dagster run (each MLflow run is
    tagged with it), moving its alias unless ``promote`` is off; deployments pick up the aliased
    version. The estate's own history is made here, so the retrain gate is not asked: a scenario trains on
    bad data as a team without Recall did."""
    from ml_models.tracking import promote_version
    from recall_dagster.mlflow_registry import mlflow_client
    from seed.dagster.run import train_in_dagster

    names = tuple(s.name for s in registry.models if models is None or s.name in models)
    with progress.step(f"train {', '.join(names)} in Dagster → MLflow"):
        run = train_in_dagster(settings, names)
        client = mlflow_client(ensure_tracking_server(settings), ALIAS_READ_LIMITS)
        for spec in registry.models:
            if spec.name not in run.versions:
                continue
            version = run.versions[spec.name]
            if promote:
                promote_version(client, spec, version)
            if redeploy and promote:
                for deployment in spec.deployments:
                    state.deployed[deployment.name] = version
            progress.note(f"{spec.registered_name} v{version} "
                          + (f"alias {spec.alias}" if promote else "registered as a candidate, not promoted"))
        progress.note(f"Dagster run {run.run_id[:8]} (location demo_estate, under {run.instance}), "
                      "carried into DataHub by DataHub's Dagster plugin")
    state.save()
    return dict(run.versions)


def train_models(
    settings: Settings, registry: FeatureRegistry, models: tuple[str, ...], tags: Mapping[str, str],
) -> dict[str, int]:
    """Train and register each model in MLflow (through the tracking server) as a candidate, its run carrying
    ``tags`` (the Dagster run's): what a training asset does."""
    from ml_models.train import train_model

    trained: dict[str, int] = {}
    tracking = ensure_tracking_server(settings)
    with sql_connection(ensure_warehouse(settings).url) as conn:
        def read_sql(query: str) -> pd.DataFrame:
            return pd.read_sql(sqlalchemy.text(query), conn)

        for spec in registry.models:
            if spec.name in models:
                record = train_model(spec, registry, read_sql, tracking, promote=False, tags=tags)
                trained[spec.name] = record.version
    return trained


def evaluate(settings: Settings, model: str, before: datetime | None = None) -> dict[str, float]:
    """Fit and score ``model`` on the warehouse as training would, with the training registry in force;
    nothing is recorded. ``before``: only on rows loaded before then. It imports the training code from
    wherever Python finds it: in a repair's copy, the copy's."""
    from ml_models.train import evaluate_model

    registry = injuries.training_registry(settings)
    with sql_connection(ensure_warehouse(settings).url) as conn:
        return evaluate_model(registry.model(model), registry, lambda q: pd.read_sql(sqlalchemy.text(q), conn),
                              before)


def dbt_test(settings: Settings, select: str) -> DbtRunSummary:
    """Run the selected dbt tests of the project this code sits in (in a repair's copy, the copy's)."""
    return dbt_test_in_project(settings, ensure_warehouse(settings), select)


def publish(
    settings: Settings, warehouse: Warehouse, registry: FeatureRegistry, state: EstateState, progress: Progress
) -> list[tuple[str, int, tuple[str, ...]]]:
    """Feast serves the registry's feature tables from the warehouse as it stands, then DataHub ingests it all."""
    with progress.step("Feast: export, apply, materialise and read back online"):
        served = serve_features(settings, registry, warehouse)
        progress.note(", ".join(f"{c.view} {c.rows_exported:,} rows ({c.rows_online:,} online)" for c in served.checks)
                      + (f"; removed {', '.join(served.removed)}" if served.removed else ""))
    return ingest(settings, registry, state, progress)


def ingest(
    settings: Settings, registry: FeatureRegistry, state: EstateState, progress: Progress
) -> list[tuple[str, int, tuple[str, ...]]]:
    """DataHub's dbt, mlflow and feast sources over the estate as it stands (in their own environment, as
    ``recall ingest`` runs them), then the enrichment."""
    with progress.step("DataHub ingestion: dbt, mlflow and feast sources (their own environment), then enrichment"):
        result = ingest_all(settings, registry, dbt_artifacts(settings), state.deployed, feast_repo(settings),
                            progress.note)
        progress.note(f"{result.source_records} records from sources, {result.enrichment_records} enrichment")
    held = read_registry(settings.mlflow_uri, ALIAS_READ_LIMITS)
    aliases = held.aliases if held else {}
    return [(v.registered_name, v.version, aliases.get((v.registered_name, str(v.version)), ())) for v in result.versions]


def entity_counts(settings: Settings) -> dict[str, int]:
    graph = open_graph(settings, read_only=True)
    try:
        return {etype: len(graph.list_urns(etype)) for etype in ENTITY_TYPES}
    finally:
        graph.close()


def reset(settings: Settings, progress: Progress) -> None:
    """Stop the embedded warehouse and the MLflow tracking server, and remove RECALL_HOME entirely."""
    with progress.step(f"reset {settings.home}"):
        stop_tracking_server(settings)
        stop_warehouse(settings)
        if settings.home.exists():
            shutil.rmtree(settings.home)


def _counts_line(result: DbtRunSummary) -> str:
    parts = [f"{kind}: " + ", ".join(f"{n} {status}" for status, n in sorted(c.items())) for kind, c in result.counts.items()]
    line = "; ".join(parts)
    return line + (f" — failing: {', '.join(result.failing_tests)}" if result.failing_tests else "")

