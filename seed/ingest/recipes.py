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
from recall_dagster import recipes
from recall_dagster.errors import ServiceUnreachable, StackError
from recall_dagster.settings import Settings

os.environ.setdefault("DATAHUB_TELEMETRY_ENABLED", "false")


def sink_config(settings: Settings) -> dict[str, Any]:
    """The sink every recipe shares: the estate's DataHub Lite file or GMS."""
    return recipes.sink_config(settings.graph, "DATAHUB_GMS_TOKEN" if settings.gms_token else None)


def dbt_recipe(settings: Settings, target_dir: Path, run_results: list[Path]) -> dict[str, Any]:
    """The official dbt source over the artifacts of the last real dbt runs, on the demo's Postgres."""
    return recipes.dbt_recipe(target_dir, "postgres", sink_config(settings), run_results)


def mlflow_recipe(settings: Settings, tracking_uri: str) -> dict[str, Any]:
    """The official mlflow source over the estate's tracking server, as a team points it at theirs."""
    return recipes.mlflow_recipe(tracking_uri, sink_config(settings))


def feast_recipe(settings: Settings, repo: Path, registry: FeatureRegistry) -> dict[str, Any]:
    """The official feast source over the demo's repository; the owner ids its feature views carry are
    mapped to themselves (the source extracts no owner it has no mapping for)."""
    owners = sorted({o.id for table in registry.feature_tables for o in table.owners})
    mappings = [{"feast_owner_name": o, "datahub_owner_urn": o, "datahub_ownership_type": "TECHNICAL_OWNER"}
                for o in owners]
    return recipes.feast_recipe(repo, sink_config(settings), registry.env, mappings)


def run_recipe(settings: Settings, name: str, recipe: dict[str, Any]) -> int:
    """Write the recipe, run it in-process, and turn pipeline failures into a precise error; records written."""
    from datahub.ingestion.run.pipeline import Pipeline

    path = recipes.write_recipe(settings.recipes_dir, name, recipe)
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
