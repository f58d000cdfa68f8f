"""DataHub ingestion recipes for a team's own stack, as ``recall init`` writes them and the demo runs them.

What these encode is what a team would otherwise learn the hard way: the dbt
source's default ``write_semantics: PATCH`` needs a graph to read from, which
only the REST sink gives, so a DataHub Lite file needs ``OVERRIDE``; DataHub
Lite's own sink drops PATCH proposals (the dbt source's lineage on the
warehouse tables), so the Lite recipes name Recall's sink, which applies them;
``sources.json`` (``dbt source freshness``) is where the dbt source finds when
a source was last loaded; and every dbt command rewrites ``manifest.json`` and
``run_results.json``: the build's results are kept aside before ``dbt docs
generate``, whose manifest holds every model's compiled SQL, without which the
dbt source records no column lineage (:data:`DBT_ORDER`, measured on a project
in the shape of Dagster's own dbt example).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

import yaml

from recall_dagster.errors import ConfigError

if TYPE_CHECKING:
    from recall_dagster.warehouse import DbtTarget


LITE_SINK = "recall_dagster.graph.lite_sink.RecallLiteSink"

# The build's run_results.json, kept aside: ``dbt docs generate`` rewrites run_results.json.
BUILD_RESULTS = "run_results.build.json"
# Where a team's dbt leaves run results: the CLI's own (``run_results.json`` of the last command, and the build's
# copy :data:`DBT_ORDER` keeps), and one folder per dagster-dbt invocation (``target/<assets>-<run>-<hash>/``).
RUN_RESULTS = ("run_results*.json", "*/run_results.json")
# The order that keeps every artifact the dbt source reads. ``dbt source freshness`` and ``dbt test`` write a
# manifest without compiled SQL, and ``docs generate`` one with it (the dbt source's column lineage needs it), so
# ``docs generate`` comes last, after the build's results are copied where it does not write.
DBT_ORDER = (
    ("dbt source freshness", "sources.json: when each source was last loaded (sources with a freshness block)"),
    ("dbt build", "run_results.json: each test's result and each model's build"),
    (f"cp target/run_results.json target/{BUILD_RESULTS}", "the build's results, kept from docs generate"),
    ("dbt docs generate", "catalog.json, and a manifest with every model's compiled SQL (column lineage)"),
)


def sink_config(graph: str, token_variable: str | None = None) -> dict[str, Any]:
    """The sink every recipe shares: the GMS REST endpoint for an http(s) URL, else the DataHub Lite file."""
    if graph.startswith(("http://", "https://")):
        config: dict[str, Any] = {"server": graph}
        if token_variable:
            config["token"] = "${" + token_variable + "}"
        return {"type": "datahub-rest", "config": config}
    return {"type": LITE_SINK, "config": {"type": "sqlite", "config": {"file": graph}}}


def dbt_recipe(
    target_dir: Path, target_platform: str, sink: Mapping[str, Any], run_results: list[Path] | None = None
) -> dict[str, Any]:
    """DataHub's dbt source over a project's artifacts: tests become assertions with their runs, model builds
    become process instances (Recall's freshness), the catalog supplies schemas. Unless named, the run results
    are whatever the team's dbt leaves (:data:`RUN_RESULTS`); ``recall ingest`` reads the artifacts that exist
    (:mod:`recall_dagster.dbt_artifacts`)."""
    config: dict[str, Any] = {
        "manifest_path": str(target_dir / "manifest.json"),
        "catalog_path": str(target_dir / "catalog.json"),
        "sources_path": str(target_dir / "sources.json"),
        "run_results_paths": [str(p) for p in (run_results or [target_dir / g for g in RUN_RESULTS])],
        "target_platform": target_platform,
        "include_column_lineage": True,
        "infer_dbt_schemas": True,
    }
    if sink["type"] != "datahub-rest":  # PATCH merges with what a server holds: no server, no PATCH
        config["write_semantics"] = "OVERRIDE"
    return {"source": {"type": "dbt", "config": config}, "sink": dict(sink)}


def mlflow_recipe(tracking_uri: str, sink: Mapping[str, Any], warehouse_platform: str | None = None
                  ) -> dict[str, Any]:
    """DataHub's mlflow source over the tracking server and its model registry. With the warehouse's platform,
    an input logged with that source type (:func:`recall_dagster.mlflow_inputs.warehouse_dataset`) links to the
    warehouse table: the source maps only the platforms on its own short list (postgres, snowflake… not
    duckdb) unless ``source_mapping_to_platform`` names them."""
    config: dict[str, Any] = {"tracking_uri": tracking_uri, "registry_uri": tracking_uri}
    if warehouse_platform:
        config["source_mapping_to_platform"] = {warehouse_platform: warehouse_platform}
    return {"source": {"type": "mlflow", "config": config}, "sink": dict(sink)}


def feast_recipe(repo: Path, sink: Mapping[str, Any], environment: str = "PROD",
                 owner_mappings: list[dict[str, str]] | None = None) -> dict[str, Any]:
    """DataHub's feast source over a feature repository; owners are extracted only where they are mapped."""
    config: dict[str, Any] = {"path": str(repo), "environment": environment,
                              "enable_owner_extraction": bool(owner_mappings)}
    if owner_mappings:
        config["owner_mappings"] = owner_mappings
    return {"source": {"type": "feast", "config": config}, "sink": dict(sink)}


# What DataHub's source of the warehouse adds to the dbt source's picture, as init says it.
WAREHOUSE_WHY = ("the warehouse as it is, beside what dbt declares: its views with their lineage, the tables dbt "
                 "does not build, and the column types the warehouse actually holds (schema drift)")
# dbt's ``env_var('NAME')`` in a profile value: the recipe names the same variable for DataHub to expand.
ENV_VAR = re.compile(r"""\{\{\s*env_var\(\s*['"]([A-Za-z_][A-Za-z0-9_]*)['"]""")
SECRETS = frozenset({"password", "pass", "private_key_passphrase", "token"})


def warehouse_recipe(target: DbtTarget, sink: Mapping[str, Any]) -> dict[str, Any] | None:
    """DataHub's own source of the warehouse a dbt profile's target reaches, None for an adapter DataHub has no
    source for (DuckDB). A value the profile reads from the environment stays a ``${VAR}`` DataHub expands when
    the recipe runs, and a secret written in the profile is never copied: the recipe names
    ``${<PLATFORM>_PASSWORD}`` instead."""
    platform = target.platform

    def value(*keys: str) -> str | None:
        raw = target.raw(*keys)
        named = ENV_VAR.search(raw) if isinstance(raw, str) else None
        if named:
            return "${" + named.group(1) + "}"
        if raw is not None and set(keys) & SECRETS:
            return "${" + f"{platform.upper()}_PASSWORD" + "}"
        return target.value(*keys)

    default_port = {"postgres": "5432", "redshift": "5439", "mysql": "3306"}
    config: dict[str, Any]
    host, port = value("host"), value("port") or default_port.get(platform)
    if platform == "postgres" and _socket(target):  # a socket directory, as libpq takes it
        password = value("password", "pass")
        login = f"{value('user', 'username')}{':' + password if password else ''}"
        config = {"sqlalchemy_uri": f"postgresql+psycopg2://{login}@/{value('dbname', 'database')}"
                                    f"?host={host}&port={port}",  # the source requires host_port; the URI wins
                  "host_port": f"{host}:{port}", "database": value("dbname", "database")}
    elif platform in default_port:
        config = {
            "host_port": f"{host}:{port}",
            "database": value("dbname", "database") if platform != "mysql" else None,
            "username": value("user", "username"), "password": value("password", "pass"),
        }
        if platform == "mysql":
            config["database_pattern"] = {"allow": [f"^{value('schema', 'database')}$"]}
    elif platform == "snowflake":
        config = {"account_id": value("account"), "username": value("user"), "password": value("password"),
                  "warehouse": value("warehouse"), "role": value("role"),
                  "database_pattern": {"allow": [f"^{value('database')}$"]}}
    elif platform == "bigquery":
        config = {"project_ids": [value("project", "database")]}
    else:
        return None
    return {"source": {"type": platform, "config": {k: v for k, v in config.items() if v is not None}},
            "sink": dict(sink)}


def _socket(target: DbtTarget) -> bool:
    """Whether the profile's host is a socket directory; a host whose variable is not set yet (init runs before
    the warehouse's environment is) is taken for a network host."""
    try:
        return (target.value("host") or "").startswith("/")
    except ConfigError:
        return False


def write_recipe(folder: Path, name: str, recipe: Mapping[str, Any]) -> Path:
    """A recipe a person can run with ``datahub ingest -c``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yml"
    path.write_text(yaml.safe_dump(dict(recipe), sort_keys=False))
    return path
