"""Recipes for DataHub's official ingestion sources, written to disk and run in-process.

The recipes are plain ``datahub ingest`` YAML kept under ``RECALL_HOME/recipes``
so a person can rerun any of them by hand (``datahub ingest -c ...``) and get
the same graph; running them in-process only saves a Python start-up.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from ml_models.registry import FeatureRegistry
from recall_dagster.errors import ServiceUnreachable, StackError
from recall_dagster.settings import Settings

os.environ.setdefault("DATAHUB_TELEMETRY_ENABLED", "false")

LITE_SINK = "recall_dagster.graph.lite_sink.RecallLiteSink"


def sink_config(settings: Settings) -> dict[str, Any]:
    """The sink every recipe shares: DataHub Lite file or the GMS REST endpoint."""
    if settings.graph_is_remote:
        config: dict[str, Any] = {"server": settings.graph}
        if settings.gms_token:
            config["token"] = "${DATAHUB_GMS_TOKEN}"
        return {"type": "datahub-rest", "config": config}
    # DataHub Lite's own sink drops PATCH proposals (the dbt source's lineage on
    # the warehouse tables); this sink writes the same file and applies them.
    return {"type": LITE_SINK, "config": {"type": "sqlite", "config": {"file": settings.graph}}}


def dbt_recipe(settings: Settings, target_dir: Path, run_results: list[Path]) -> dict[str, Any]:
    """The official dbt source over the artifacts of the last real dbt runs.

    ``write_semantics: OVERRIDE`` because only the REST sink understands PATCH;
    the catalog supplies schemas (the postgres source needs a newer sqlparse
    than dbt allows), and run results become assertion run events.
    """
    config: dict[str, Any] = {
        "manifest_path": str(target_dir / "manifest.json"),
        "catalog_path": str(target_dir / "catalog.json"),
        "run_results_paths": [str(path) for path in run_results],
        "target_platform": "postgres",
        "write_semantics": "OVERRIDE",
        "include_column_lineage": True,
        "infer_dbt_schemas": True,
    }
    sources = target_dir / "sources.json"
    if sources.exists():
        config["sources_path"] = str(sources)
    return {"source": {"type": "dbt", "config": config}, "sink": sink_config(settings)}


def mlflow_recipe(settings: Settings) -> dict[str, Any]:
    """The official mlflow source over the tracking server and model registry."""
    return {
        "source": {
            "type": "mlflow",
            "config": {"tracking_uri": settings.mlflow_uri, "registry_uri": settings.mlflow_uri},
        },
        "sink": sink_config(settings),
    }


def feast_recipe(settings: Settings, repo: Path, registry: FeatureRegistry) -> dict[str, Any]:
    """The official feast source over the demo's repository; the owner ids its feature views carry are
    mapped to themselves (the source extracts no owner it has no mapping for)."""
    owners = sorted({o.id for table in registry.feature_tables for o in table.owners})
    mappings = [{"feast_owner_name": o, "datahub_owner_urn": o, "datahub_ownership_type": "TECHNICAL_OWNER"}
                for o in owners]
    config: dict[str, Any] = {"path": str(repo), "environment": registry.env,
                              "enable_owner_extraction": bool(mappings)}
    if mappings:
        config["owner_mappings"] = mappings
    return {"source": {"type": "feast", "config": config}, "sink": sink_config(settings)}


def write_recipe(settings: Settings, name: str, recipe: dict[str, Any]) -> Path:
    """Keep the recipe where a person can rerun it with ``datahub ingest -c``."""
    settings.recipes_dir.mkdir(parents=True, exist_ok=True)
    path = settings.recipes_dir / f"{name}.yml"
    path.write_text(yaml.safe_dump(recipe, sort_keys=False))
    return path


def run_recipe(settings: Settings, name: str, recipe: dict[str, Any]) -> int:
    """Write the recipe, run it in-process, and turn pipeline failures into a precise error; records written."""
    from datahub.ingestion.run.pipeline import Pipeline

    path = write_recipe(settings, name, recipe)
    env = {"DATAHUB_GMS_TOKEN": settings.gms_token} if settings.gms_token else {}
    resolved = _resolve_env(recipe, env)
    try:
        pipeline = Pipeline.create(resolved, report_to=None, no_progress=True)
        pipeline.run()
    except (ConnectionError, OSError) as err:
        raise ServiceUnreachable(f"ingestion '{name}' could not reach its target: {err}") from err
    source_report, sink_report = pipeline.source.get_report(), pipeline.sink.get_report()
    failures = list(source_report.failures) + list(sink_report.failures)
    if failures:
        first = failures[0]
        raise StackError(
            f"ingestion recipe {path} reported {len(failures)} failure(s); first: {first}"
        )
    return sink_report.total_records_written


def _resolve_env(recipe: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    """Expand the ``${VAR}`` references the written recipe keeps instead of secrets."""
    text = yaml.safe_dump(recipe)
    for key, value in env.items():
        text = text.replace("${" + key + "}", value)
    return yaml.safe_load(text)
