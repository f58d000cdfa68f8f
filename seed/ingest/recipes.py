"""Recipes for DataHub's official ingestion sources, written to disk and run in the ingestion environment.

The recipes are plain ``datahub ingest`` YAML kept under ``RECALL_HOME/recipes``
so a person can rerun any of them by hand (``recall ingest ...``, or ``datahub
ingest -c ...`` where DataHub's sources are installed) and get the same graph.
The demo runs them as ``recall ingest`` does (:mod:`recall_dagster.ingest_env`):
``datahub ingest -c`` in an environment of DataHub's own, since its sources pin
what the demo's stack has moved past (the mlflow source holds MLflow below
2.21). That environment lies beside the demo's own (``.venv/ingest/``), made
from ``constraints-ingest.txt`` by ``make install``, so every estate on this
checkout shares it; what it lacks is installed on first use.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any, Callable, Sequence

from ml_models.registry import FeatureRegistry
from recall_dagster import ingest_env, recipes
from recall_dagster.errors import StackError
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


def ingestion_env() -> ingest_env.IngestEnv:
    """DataHub's sources at the acryl-datahub Recall reads with, beside the environment this runs in."""
    return ingest_env.IngestEnv(Path(sys.prefix) / "ingest", version(ingest_env.DISTRIBUTION))


def run_recipes(settings: Settings, named: Sequence[tuple[str, dict[str, Any]]],
                say: Callable[[str], None] = lambda line: None) -> int:
    """Write each recipe and run it with ``datahub ingest`` in the ingestion environment, in order, its output
    in ``RECALL_HOME/logs/ingest.log``; records written. A failed run is an error showing the log's end."""
    paths = [(name, recipes.write_recipe(settings.recipes_dir, name, recipe)) for name, recipe in named]
    read = [recipe for _, recipe in named]
    env = ingestion_env()
    ingest_env.prepare(env, ingest_env.plugins(read, ingest_env.offered_extras()), ingest_env.store_packages(read),
                       say)
    log = settings.home / "logs" / "ingest.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    for name, path in paths:
        report = settings.recipes_dir / f"{name}.report.json"
        report.unlink(missing_ok=True)
        try:
            ingest_env.ingest(env, path, run=_logged(log, settings), options=("--report-to", str(report)))
        except StackError:
            raise StackError(f"ingestion recipe {path} failed in {env.path}: {_first_failure(report, log)}; "
                             f"its output is in {log}") from None
        written += _records_written(report)
    return written


def _first_failure(report: Path, log: Path) -> str:
    """The first failure the source or the sink reported, else the last lines of the run's output."""
    try:
        held = json.loads(report.read_text(encoding="utf-8"))
        failures = [*held["source"]["report"].get("failures", []), *held["sink"]["report"].get("failures", [])]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        failures = []
    if failures:
        first = failures[0]
        if isinstance(first, dict):
            return "; ".join(str(part) for part in (first.get("message"), *(first.get("context") or [])) if part)
        return str(first)
    return "\n".join(log.read_text(errors="replace").splitlines()[-15:]) if log.exists() else "(no output)"


def _logged(log: Path, settings: Settings) -> ingest_env.Run:
    """Runs a command with its output appended to ``log``, and the GMS token in its environment when there is one
    (the recipes name it, ``${DATAHUB_GMS_TOKEN}``, rather than hold it)."""
    env = {**os.environ, "DATAHUB_TELEMETRY_ENABLED": "false"}
    if settings.gms_token:
        env["DATAHUB_GMS_TOKEN"] = settings.gms_token

    def run(command: Sequence[str]) -> int:
        with log.open("ab") as out:
            return subprocess.run(list(command), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                  env=env, check=False).returncode

    return run


def _records_written(report: Path) -> int:
    """What the sink wrote, from the structured report ``datahub ingest --report-to`` leaves."""
    try:
        return int(json.loads(report.read_text(encoding="utf-8"))["sink"]["report"]["total_records_written"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0
