"""MLflow as Recall reaches it: one way to make a client, one judgement of what its failures mean.

MLflow's client retries a failing HTTP call for about four minutes by default,
and it reports a server that never answered and a version that does not exist
with the same exception class.  A gate that hangs four minutes, or that calls a
dead tracking server "no such version" (INCOMPLETE, exit 4) instead of a
failing service (exit 3), misleads the person waiting on it.  So impact tests,
diagnosis and the MLflow sensor all make their client here, with the
``impact.registry`` limits, and ask :func:`failing` before they read an error
as an answer.

It is also where the registry's own facts about each version are read
(:func:`read_registry`): MLflow 2.20's SQL store returns no aliases from
``search_model_versions``, the call DataHub's mlflow source uses, so a stock
ingestion leaves every version without its alias, and only the registry knows
which version ``production`` names; and DataHub 1.7's mlflow source drops run
tags, so only the registry knows the Dagster run (dagster-mlflow's
``dagster_run_id`` tag) that trained a version.
"""

from __future__ import annotations

import functools
import hashlib
import os
import sqlite3
from contextlib import closing
from dataclasses import dataclass, field
from importlib.metadata import version as distribution_version
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Iterator, Mapping
from urllib.parse import unquote

from packaging.version import Version
from pydantic import Field

from recall_dagster.config.fields import Positive, Section
from recall_dagster.errors import ServiceUnreachable, reason
from recall_dagster.run_tags import DAGSTER_RUN_TAG

if TYPE_CHECKING:
    from mlflow import MlflowClient

# Codes of a registry that could not serve the request (a 503, a rate limit, a locked or missing database);
# INTERNAL_ERROR means the same when a server answered it (a 500), and nothing definite otherwise.
_UNAVAILABLE = frozenset({"TEMPORARILY_UNAVAILABLE", "REQUEST_LIMIT_EXCEEDED", "DEADLINE_EXCEEDED"})
# How MLflow's REST client opens every message about a transport failure, a non-JSON answer or a bad status;
# an artifact download quotes it inside its own summary.  MLflow gives these its default code, INTERNAL_ERROR,
# which it also gives a local artifact that is simply missing, so the code alone cannot tell.
_TRANSPORT = "API request to "


class RegistryLimits(Section):
    """How long one request to the tracking server may take, and how often it is tried again
    (``impact.registry``); MLflow waits 2 s, 4 s, ... between tries."""

    timeout_seconds: Positive = Field(description="One HTTP request to the tracking server; then exit 3.")
    retries: Annotated[int, Field(ge=0, le=9)] = Field(
        description="Tries again after a failed request (MLflow allows 9).")


def mlflow_client(tracking_uri: str, limits: RegistryLimits) -> "MlflowClient":
    """A client whose HTTP calls give up within ``limits``; a team's own MLFLOW_HTTP_REQUEST_* settings win.

    MLflow reads these limits from the environment on every call and offers no
    per-client setting, so they are set as process defaults.
    """
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", str(limits.timeout_seconds))
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", str(limits.retries))
    from mlflow import MlflowClient

    return MlflowClient(tracking_uri=tracking_uri, registry_uri=tracking_uri)


def failing(err: BaseException) -> bool:
    """Whether MLflow failed as a service does (no answer, a 5xx, a body that is not JSON, a store that will
    not open) rather than answering that something is not there."""
    from mlflow.exceptions import MlflowException, RestException
    from sqlalchemy.exc import OperationalError

    if isinstance(err, (OSError, OperationalError)):
        return True
    if not isinstance(err, MlflowException):
        return False
    if err.error_code in _UNAVAILABLE:
        return True
    if isinstance(err, RestException):
        return err.error_code == "INTERNAL_ERROR"
    return _TRANSPORT in str(err)


def unreachable(tracking_uri: str, doing: str, err: BaseException) -> ServiceUnreachable:
    """The exit-3 error for MLflow failing while Recall was ``doing`` something, naming the server."""
    return ServiceUnreachable(f"MLflow at {tracking_uri} did not answer while {doing}: {reason(err)}")


def version_numbers(client: "MlflowClient", name: str) -> frozenset[int]:
    """Every version number the registry holds for the registered model ``name`` (none when it has none yet)."""
    return frozenset(int(v.version) for v in versions_of(client, name))


def versions_of(client: "MlflowClient", name: str) -> list:
    """Every version of the registered model ``name``. MLflow's filter takes a name in either quote and escapes
    neither, so one holding a single quote is asked for in double quotes, and one holding both is picked from
    every version."""
    for quote in ("'", '"'):
        if quote not in name:
            return list(client.search_model_versions(f"name = {quote}{name}{quote}"))
    return [v for v in _every_version(client) if v.name == name]


def _every_version(client: "MlflowClient") -> Iterator:
    token = None
    while True:
        page = client.search_model_versions(max_results=10_000, page_token=token)
        yield from page
        token = page.token
        if not token:
            return


def tag_versions(client: "MlflowClient", name: str, versions: frozenset[int], tags: dict[str, str]) -> None:
    """Set ``tags`` on each of ``versions`` of ``name``: setting a tag again to its value changes nothing."""
    for version in sorted(versions):
        for key, value in tags.items():
            client.set_model_version_tag(name, str(version), key, value)


@dataclass(frozen=True)
class RegistryFacts:
    """What a model registry knows of each (registered model name, version) that DataHub's source drops: its
    aliases, sorted, and the Dagster run that trained it."""

    location: str
    aliases: Mapping[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)
    dagster_runs: Mapping[tuple[str, str], str] = field(default_factory=dict)

    @property
    def digest(self) -> str:
        """Changes when an alias moves or a version gains its Dagster run: what a rescan kept from before must
        then be read again."""
        text = "\n".join(f"{n}\t{v}\t{','.join(a)}" for (n, v), a in sorted(self.aliases.items()))
        runs = "\n".join(f"{n}\t{v}\t{r}" for (n, v), r in sorted(self.dagster_runs.items()))
        return hashlib.sha256(f"{text}\n--\n{runs}".encode()).hexdigest()[:16]


def sqlite_store(tracking_uri: str) -> Path | None:
    """The database file of a ``sqlite:`` tracking URI (None for any other store), read as SQLAlchemy reads it
    (``sqlite:///relative.db``, ``sqlite:////absolute.db``, a query after ``?``) without importing it: every
    command asks, and SQLAlchemy costs a fifth of a second to import."""
    if not tracking_uri.startswith("sqlite://"):
        return None
    rest = tracking_uri[len("sqlite://"):].split("?", 1)[0]
    database = rest[1:] if rest.startswith("/") else ""
    if database and _decodes_database():
        database = unquote(database)
    return Path(database) if database and database != ":memory:" else None


@functools.cache
def _decodes_database() -> bool:
    """SQLAlchemy 2.1 percent-decodes a URL's database part (``x%20y.db`` opens ``x y.db``); 2.0 keeps it as
    written. Asked of the installed distribution's version, which costs no import of SQLAlchemy."""
    return Version(distribution_version("sqlalchemy")) >= Version("2.1")


def read_registry(tracking_uri: str, limits: RegistryLimits) -> RegistryFacts | None:
    """The registry's facts, or None where there is no registry (a ``sqlite:`` file not there).

    A SQLite store is read in place, read-only: importing MLflow costs seconds
    that every command would pay; any other store through MLflow's client.
    """
    store = sqlite_store(tracking_uri)
    if store is not None:
        if not store.exists():
            return None
        return _sqlite_facts(tracking_uri, store)
    client = mlflow_client(tracking_uri, limits)
    try:
        return RegistryFacts(tracking_uri, _client_aliases(client), _client_dagster_runs(client))
    except Exception as err:
        if failing(err):
            raise unreachable(tracking_uri, "reading the registry", err) from None
        raise


def _client_aliases(client: "MlflowClient") -> dict[tuple[str, str], tuple[str, ...]]:
    found: dict[tuple[str, str], list[str]] = {}
    token = None
    while True:
        page = client.search_registered_models(max_results=1000, page_token=token)
        for model in page:
            for alias, version in (model.aliases or {}).items():
                found.setdefault((model.name, str(version)), []).append(alias)
        token = page.token
        if not token:
            break
    return {k: tuple(sorted(v)) for k, v in found.items()}


# How many run ids one ``search_runs`` filter names: MLflow servers refuse very long filters.
_RUNS_PER_SEARCH = 100


def _client_dagster_runs(client: "MlflowClient") -> dict[tuple[str, str], str]:
    """The version's run's Dagster tag, asked in pages of runs rather than one request per version."""
    by_run: dict[str, list[tuple[str, str]]] = {}
    for version in _every_version(client):
        if version.run_id:
            by_run.setdefault(version.run_id, []).append((version.name, str(version.version)))
    runs = sorted(by_run)
    if not runs:
        return {}
    experiments = [e.experiment_id for e in client.search_experiments()]
    found: dict[tuple[str, str], str] = {}
    for start in range(0, len(runs), _RUNS_PER_SEARCH):
        ids = ", ".join(f"'{r}'" for r in runs[start:start + _RUNS_PER_SEARCH])
        for run in client.search_runs(experiments, f"attributes.run_id IN ({ids})", max_results=_RUNS_PER_SEARCH):
            tag = run.data.tags.get(DAGSTER_RUN_TAG)
            if not tag:
                continue
            for key in by_run.get(run.info.run_id, ()):
                found[key] = tag
    return found


def _sqlite_facts(tracking_uri: str, store: Path) -> RegistryFacts:
    """``registered_model_aliases`` (MLflow 2.3 on; an older store has none) and each version's run's Dagster
    tag, as MLflow's SQL store keeps them."""
    try:
        with closing(sqlite3.connect(f"{store.resolve().as_uri()}?mode=ro", uri=True)) as db:
            aliases = _rows(db, "SELECT name, alias, version FROM registered_model_aliases")
            runs = _rows(db, "SELECT v.name, v.version, t.value FROM model_versions v JOIN tags t "
                             "ON t.run_uuid = v.run_id AND t.key = ?", (DAGSTER_RUN_TAG,))
    except sqlite3.OperationalError as err:
        raise unreachable(f"sqlite:///{store}", "reading the registry", err) from None
    found: dict[tuple[str, str], list[str]] = {}
    for name, alias, version in aliases:
        found.setdefault((str(name), str(version)), []).append(str(alias))
    return RegistryFacts(
        tracking_uri,
        {k: tuple(sorted(v)) for k, v in found.items()},
        {(str(name), str(version)): str(run) for name, version, run in runs if run},
    )


def _rows(db: sqlite3.Connection, query: str, args: tuple[str, ...] = ()) -> list[tuple]:
    """A query's rows; none where the store predates the table (an empty or old registry)."""
    try:
        return db.execute(query, args).fetchall()
    except sqlite3.OperationalError as err:
        if "no such table" in str(err):
            return []
        raise
