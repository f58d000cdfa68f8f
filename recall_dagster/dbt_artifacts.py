"""What a dbt recipe's artifacts hold at the moment it runs, so DataHub's dbt source reads what exists.

A team's dbt makes the artifacts its own way: ``dbt run`` then ``dbt test``, ``dbt build``, or dagster-dbt's
invocations (each in a folder of its own under ``target/``); each dbt command rewrites ``run_results.json``,
and only ``dbt docs generate`` writes ``catalog.json``. The manifest ``dbt parse`` writes (dagster-dbt's
``prepare_if_dev`` runs it) holds no compiled SQL, without which the dbt source records no column lineage, while
every dagster-dbt build leaves one that does in its invocation's folder. DataHub's dbt source fails whole on a
``catalog_path`` or ``sources_path`` that is not there and skips run results written by ``docs generate``. So before a dbt recipe runs, Recall keeps the artifacts
that exist, leaves out the optional ones that do not, and says what each absence costs; only a missing manifest
stops it, since nothing can be read without one.
"""

from __future__ import annotations

import glob
import json
import os
from pathlib import Path
from typing import Any, Mapping

from recall_dagster.errors import ConfigError

# The commands whose run results carry test outcomes or model builds (``docs generate`` and ``compile`` carry
# neither: DataHub's dbt source skips the first, and the second only says each node compiled).
RESULTS_COMMANDS = frozenset({"build", "run", "test", "seed", "snapshot"})
OPTIONAL = {
    "catalog_path": "catalog.json is not there (`dbt docs generate` writes it): columns come from the manifest "
                    "alone",
    "sources_path": "sources.json is not there (`dbt source freshness` writes it): when each source was last "
                    "loaded stays unknown",
}


def _local(path: object) -> str | None:
    """A local path as DataHub reads it (``${VAR}`` filled in from the environment), None for a remote URI or
    one whose variables are not set: those are DataHub's to read."""
    if not isinstance(path, str) or "://" in path:
        return None
    expanded = os.path.expandvars(path)
    return None if "$" in expanded else expanded


def _compiled(path: Path) -> bool:
    """Whether a manifest holds a model's compiled SQL (``compiled_code``; ``compiled_sql`` before dbt 1.3)."""
    try:
        nodes = json.loads(path.read_text(encoding="utf-8")).get("nodes", {})
    except (OSError, ValueError, AttributeError):
        return False
    return any(isinstance(n, dict) and n.get("resource_type") == "model"
               and (n.get("compiled_code") or n.get("compiled_sql")) for n in nodes.values())


def _manifest(named: Path) -> tuple[Path, list[str]]:
    """The manifest to read: the named one when it holds compiled SQL, else the newest that does among the
    folders of dagster-dbt's invocations beside it, with a line saying which and why."""
    if _compiled(named):
        return named, []
    invoked = sorted(named.parent.glob("*/manifest.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    chosen = next((p for p in invoked if _compiled(p)), None)
    if chosen is not None:
        return chosen, [f"{named} holds no compiled SQL: read {chosen}, the newest dbt invocation's manifest that "
                        "does (column lineage)"]
    return named, [f"{named} holds no compiled SQL (`dbt parse` wrote it): the dbt source records no column "
                   "lineage until a build or `dbt docs generate` writes one that does"]


def _command(path: Path) -> str | None:
    """The dbt command that wrote a run results file (``args.which``), None when the file does not say."""
    try:
        which = json.loads(path.read_text(encoding="utf-8")).get("args", {}).get("which")
    except (OSError, ValueError, AttributeError):
        return None
    return which if isinstance(which, str) else None


def readable(recipe: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The recipe with only the local artifacts that exist, and one line per absence and what it costs.

    A recipe of another source, or one whose artifacts all exist, comes back as it was with nothing said."""
    source = recipe.get("source") or {}
    config = dict(source.get("config") or {})
    if source.get("type") != "dbt":
        return dict(recipe), []
    manifest = _local(config.get("manifest_path"))
    if manifest and not glob.has_magic(manifest) and not Path(manifest).exists():
        raise ConfigError(f"the dbt recipe's manifest {manifest} does not exist: any dbt command writes it "
                          "(`dbt docs generate` writes the one with compiled SQL, for column lineage)")
    said: list[str] = []
    if manifest and not glob.has_magic(manifest):
        chosen, said = _manifest(Path(manifest))
        if chosen != Path(manifest):
            config["manifest_path"] = str(chosen)
    for key, cost in OPTIONAL.items():
        path = _local(config.get(key))
        if path and not Path(path).exists():
            del config[key]
            said.append(f"{cost}; read without {path}")
    patterns = config.get("run_results_paths") or []
    local = {p: path for p in patterns if (path := _local(p))}
    found = {p: sorted(glob.glob(path)) for p, path in local.items()}
    if found and not any(found.values()):
        said.append(f"no run results at {' or '.join(local.values())}")
    if "run_results_paths" in config:
        config["run_results_paths"] = [p for p in patterns if not isinstance(p, str) or p not in local or found[p]]
    read = [Path(path) for matched in found.values() for path in matched]
    if found and not any(_command(path) in RESULTS_COMMANDS for path in read):
        among = f" among {', '.join(path.name for path in read)}" if read else ""
        said.append(f"no run results of dbt build, run or test{among}: test outcomes and model builds will not "
                    "reach the graph (copy run_results.json aside after the tests, before `dbt docs generate` "
                    "rewrites it)")
    return {**recipe, "source": {**source, "config": config}}, said
