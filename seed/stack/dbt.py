"""Run the warehouse's dbt project in-process and report what happened as data.

A failing dbt test is a finding, not a crash: ``dbt_build`` returns a summary with
the failing tests named. Only a dbt that cannot run at all (bad profile, database
unreachable, broken project) raises. Artifacts go under ``RECALL_HOME/dbt`` so
the checked-in project stays clean, and each command's ``run_results.json`` is
kept under its own name because ``dbt docs generate`` overwrites the build's
test results that DataHub's dbt source needs.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import takewhile
from pathlib import Path
from typing import Any

from dbt.cli.main import dbtRunner, dbtRunnerResult

from recall_dagster.errors import ServiceUnreachable, StackError
from recall_dagster.settings import Settings
from seed.stack.warehouse import Warehouse

PROJECT_DIR = Path(__file__).resolve().parents[2] / "dbt_project"
FAILED_TEST_STATUSES = ("fail", "error")
_UNREACHABLE_HINTS = (
    "could not connect", "connection refused", "no such file or directory", "timeout expired",
    "could not translate host name", "server closed the connection",
)
# dbtRunner keeps global state (flags, adapters, the environment it reads): one invocation at a time.
_INVOKE_LOCK = threading.Lock()


@dataclass(frozen=True)
class DbtRunSummary:
    """Outcome of one dbt command, node by node."""

    success: bool  # dbt's own verdict: False when any node failed, errored or went stale
    statuses: dict[str, str]  # unique_id -> status (success, pass, fail, warn, error, skipped, ...)
    counts: dict[str, dict[str, int]]  # resource type -> status -> number of nodes
    failing_tests: tuple[str, ...]  # names of tests that failed or errored

    def with_status(self, *statuses: str) -> list[str]:
        """unique_ids whose status is one of ``statuses``, e.g. ``with_status("skipped")``."""
        return sorted(uid for uid, status in self.statuses.items() if status in statuses)


@dataclass(frozen=True)
class DbtArtifacts:
    """The files DataHub's dbt source reads; run_results is the build's, not docs generate's."""

    manifest: Path
    catalog: Path
    run_results: Path


def dbt_target_dir(settings: Settings) -> Path:
    return settings.dbt_dir / "target"


def dbt_artifacts(settings: Settings) -> DbtArtifacts:
    target = dbt_target_dir(settings)
    return DbtArtifacts(
        manifest=target / "manifest.json",
        catalog=target / "catalog.json",
        run_results=target / "run_results.build.json",
    )


def dbt_env(warehouse: Warehouse) -> dict[str, str]:
    """The variables dbt_project/profiles.yml reads; also what a dbt subprocess (dagster-dbt) needs."""
    return {
        "RECALL_DBT_HOST": warehouse.host,
        "RECALL_DBT_PORT": str(warehouse.port),
        "RECALL_DBT_USER": warehouse.user,
        "RECALL_DBT_PASSWORD": warehouse.password,
        "RECALL_DBT_DBNAME": warehouse.database,
        "DO_NOT_TRACK": "1",  # there is no network; dbt must not try to phone home
        "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
    }


def dbt_build(
    settings: Settings,
    warehouse: Warehouse,
    vars: Mapping[str, Any] | None = None,
    select: str | None = None,
    exclude: str | None = None,
) -> DbtRunSummary:
    """``dbt build``: models and their tests in DAG order; a failing test skips its descendants."""
    args = ["build", *_vars_args(vars)]
    args += ["--select", select] if select else []
    args += ["--exclude", exclude] if exclude else []
    result = _invoke(settings, warehouse, args)
    keep_build_results(settings)
    return _summarise(result)


def dbt_test_in_project(settings: Settings, warehouse: Warehouse, select: str) -> DbtRunSummary:
    """``dbt test --select`` with its artifacts in the project's own ``target/``: how a repair's copy runs the
    test it adds, leaving the estate's artifacts under RECALL_HOME alone."""
    return _summarise(_invoke(settings, warehouse, ["test", "--select", select], PROJECT_DIR / "target"))


def dbt_source_freshness(settings: Settings, warehouse: Warehouse) -> DbtRunSummary:
    """``dbt source freshness`` against the real clock; statuses are pass / warn / error per source."""
    return _summarise(_invoke(settings, warehouse, ["source", "freshness"]))


def dbt_docs_generate(settings: Settings, warehouse: Warehouse, vars: Mapping[str, Any] | None = None) -> DbtArtifacts:
    """``dbt docs generate`` for catalog.json (column types for DataHub); keeps the build's results apart."""
    result = _invoke(settings, warehouse, ["docs", "generate", *_vars_args(vars)])
    if not result.success:
        raise StackError(f"dbt docs generate failed; see {settings.dbt_dir / 'logs' / 'dbt.log'}")
    return dbt_artifacts(settings)


def _vars_args(vars: Mapping[str, Any] | None) -> list[str]:
    return ["--vars", json.dumps(dict(vars))] if vars else []


def _invoke(
    settings: Settings, warehouse: Warehouse, args: Sequence[str], target: Path | None = None
) -> dbtRunnerResult:
    settings.dbt_dir.mkdir(parents=True, exist_ok=True)
    full = [
        *args,
        "--project-dir", str(PROJECT_DIR),
        "--profiles-dir", str(PROJECT_DIR),
        "--target-path", str(target or dbt_target_dir(settings)),
        "--log-path", str(settings.dbt_dir / "logs"),
        "--log-level-file", "info",
        "--no-send-anonymous-usage-stats",
        "--no-version-check",
        "--log-level", "none",  # stdout stays the caller's; details go to logs/dbt.log
    ]
    with _INVOKE_LOCK, dbt_environment(dbt_env(warehouse)):
        result = dbtRunner().invoke(full)
    if result.exception is not None:
        raise _cannot_run(args, warehouse, result.exception)
    return result


def _cannot_run(args: Sequence[str], warehouse: Warehouse, err: BaseException) -> Exception:
    message = " ".join(str(err).split())
    what = "dbt " + " ".join(takewhile(lambda arg: not arg.startswith("-"), args))
    if any(hint in message.lower() for hint in _UNREACHABLE_HINTS):
        return ServiceUnreachable(f"{what} could not reach the warehouse at {warehouse.where}: {message}")
    return StackError(f"{what} could not run: {message}")


@contextmanager
def dbt_environment(values: Mapping[str, str]) -> Iterator[None]:
    """Set variables for one in-process dbt call and restore the caller's environment after."""
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, old in saved.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old


def keep_build_results(settings: Settings) -> None:
    """Copy the build's run_results.json aside: ``docs generate`` overwrites it, DataHub needs the tests'."""
    source = dbt_target_dir(settings) / "run_results.json"
    if source.exists():
        shutil.copyfile(source, dbt_artifacts(settings).run_results)


def _summarise(result: dbtRunnerResult) -> DbtRunSummary:
    statuses: dict[str, str] = {}
    by_type: dict[str, Counter[str]] = defaultdict(Counter)
    failing: list[str] = []
    for node_result in getattr(result.result, "results", None) or []:
        node = node_result.node
        status = str(getattr(node_result.status, "value", node_result.status))
        resource_type = str(getattr(node.resource_type, "value", node.resource_type))
        statuses[node.unique_id] = status
        by_type[resource_type][status] += 1
        if resource_type == "test" and status in FAILED_TEST_STATUSES:
            failing.append(node.name)
    return DbtRunSummary(
        success=bool(result.success),
        statuses=statuses,
        counts={kind: dict(counter) for kind, counter in by_type.items()},
        failing_tests=tuple(sorted(failing)),
    )
