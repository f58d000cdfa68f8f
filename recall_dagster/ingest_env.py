"""DataHub's ingestion sources in an environment of their own, as DataHub runs them.

Why: a source pins what a team's stack has moved past (DataHub's mlflow source holds ``mlflow-skinny`` below
2.21, and with it pandas below 3), so installing the sources beside Recall would rewrite the team's
environment; Recall's core needs none of them. ``recall ingest`` runs ``datahub ingest -c`` in a virtual
environment under ``RECALL_HOME/ingest/``, one per acryl-datahub version: the version this Recall reads the
graph with, so what the sources write is what Recall parses. It is made with this interpreter on first use and
given the source plugins each recipe names, later runs reuse it.

A recipe that writes a DataHub Lite file names Recall's own sink. The environment sees this installation's
``recall_dagster`` package through a path file naming a folder that holds a link to that package alone: the
sink needs only DataHub's SDK, and nothing else of the team's environment is visible there.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, metadata, version
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import yaml
from packaging.version import Version

from recall_dagster.errors import ConfigError, StackError
from recall_dagster.files import locked

DISTRIBUTION = "acryl-datahub"
# DataHub's own sinks that are extras of acryl-datahub (the file and console sinks come with it).
SINK_PLUGINS = frozenset({"datahub-rest", "datahub-kafka", "datahub-lite"})
# What MLflow's client opens a database store with; the mlflow source's MLflow (below 2.21) imports a pool
# SQLAlchemy 2.1 no longer has.
STORE_CLIENT = ("sqlalchemy>=1.4,<2.1", "alembic!=1.10.0,<2")
# An MLflow store kept in a database, by its URI's scheme: the driver its SQLAlchemy dialect loads.
DATABASE_STORES: dict[str, tuple[str, ...]] = {"sqlite": (), "postgresql": ("psycopg2-binary",), "mysql": ("pymysql",)}
# How long a second `recall ingest` waits while the first installs the environment they share.
INSTALL_WAIT_SECONDS = 900.0

Run = Callable[[Sequence[str]], int]


def _run(command: Sequence[str]) -> int:
    return subprocess.run(list(command), check=False).returncode


def read_recipe(path: Path) -> dict[str, Any]:
    """A recipe's YAML, as ``datahub ingest -c`` would read it, refused by name when it cannot be."""
    try:
        recipe = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"cannot read the recipe {path}: {err}") from err
    except yaml.YAMLError as err:
        raise ConfigError(f"the recipe {path} is not YAML: {str(err).splitlines()[0]}") from err
    source = recipe.get("source") if isinstance(recipe, dict) else None
    if not isinstance(source, dict) or not isinstance(source.get("type"), str):
        raise ConfigError(f"the recipe {path} names no source.type: it is not a DataHub ingestion recipe")
    return recipe


def plugins(recipes: Iterable[Mapping[str, Any]], offered: Iterable[str]) -> list[str]:
    """The acryl-datahub extras the recipes need: each source's type and each DataHub sink's, where the
    distribution offers an extra of that name (a class path such as Recall's sink, or ``file``, needs none)."""
    wanted: set[str] = set()
    for recipe in recipes:
        wanted.add(recipe["source"]["type"])
        sink = recipe.get("sink")
        if isinstance(sink, dict) and sink.get("type") in SINK_PLUGINS:
            wanted.add(sink["type"])
    return sorted(wanted & set(offered))


def store_packages(recipes: Iterable[Mapping[str, Any]]) -> list[str]:
    """What DataHub's mlflow source needs beyond its extra to read a tracking store kept in a database: its
    extra brings ``mlflow-skinny``, whose client opens such a store through SQLAlchemy and Alembic, which only
    the full ``mlflow`` brings (an HTTP tracking server needs neither)."""
    needed: set[str] = set()
    for recipe in recipes:
        config = recipe["source"].get("config")
        if recipe["source"]["type"] != "mlflow" or not isinstance(config, dict):
            continue
        for key in ("tracking_uri", "registry_uri"):
            scheme = _scheme(str(config.get(key) or ""))
            if scheme in DATABASE_STORES:
                needed.update((*STORE_CLIENT, *DATABASE_STORES[scheme]))
    return sorted(needed)


def unreadable_store(tracking_uri: str, mlflow_version: str) -> str | None:
    """Why DataHub's mlflow source cannot read this tracking store, or None: its MLflow (below 2.21) opens a
    database store only at a schema it knows, and MLflow 2.21 and later migrate theirs past it. Over HTTP, a
    tracking server of any version answers it."""
    scheme = _scheme(tracking_uri)
    if scheme not in DATABASE_STORES or Version(mlflow_version) < Version("2.21"):
        return None
    return (f"DataHub's mlflow source reads with MLflow below 2.21, which cannot open the {scheme} store of MLflow "
            f"{mlflow_version}: give --mlflow your tracking server's http(s) URL (`mlflow server` over this store)")


def _scheme(uri: str) -> str:
    """A store URI's database, without its driver: ``postgresql`` of ``postgresql+psycopg2://…``."""
    return uri.partition(":")[0].partition("+")[0]


def offered_extras() -> list[str]:
    """The extras of the acryl-datahub Recall runs with, which the ingestion environment installs at its version."""
    return list(metadata(DISTRIBUTION).get_all("Provides-Extra") or [])


@dataclass(frozen=True)
class IngestEnv:
    """The environment ``recall ingest`` runs DataHub's sources in: ``ROOT/acryl-datahub-VERSION``."""

    root: Path
    datahub_version: str

    @property
    def path(self) -> Path:
        return self.root / f"{DISTRIBUTION}-{self.datahub_version}"

    @property
    def python(self) -> Path:
        return self.path / "bin" / "python"

    @property
    def datahub(self) -> Path:
        return self.path / "bin" / "datahub"

    @property
    def record(self) -> Path:
        """What is installed so far: a later recipe naming another source adds only what it lacks."""
        return self.path / "recall-installed.json"

    def installed(self) -> tuple[set[str], set[str]]:
        """The acryl-datahub extras and the other packages installed so far."""
        try:
            held = json.loads(self.record.read_text(encoding="utf-8"))
            return set(held["extras"]), set(held["packages"])
        except (OSError, ValueError, TypeError, KeyError):
            return set(), set()

    def requirement(self, extras: Iterable[str]) -> str:
        listed = ",".join(sorted(extras))
        return f"{DISTRIBUTION}{f'[{listed}]' if listed else ''}=={self.datahub_version}"


def ingest_env(home: Path) -> IngestEnv:
    """The environment for the acryl-datahub this Recall reads with."""
    try:
        return IngestEnv(home / "ingest", version(DISTRIBUTION))
    except PackageNotFoundError:
        raise ConfigError(f"{DISTRIBUTION} is not installed beside Recall: reinstall recall-dagster") from None


def prepare(env: IngestEnv, extras: Sequence[str], packages: Sequence[str], say: Callable[[str], None],
            run: Run = _run) -> None:
    """Make the environment if it is not there, install what it lacks, and let it see Recall's sink. Two runs
    at once take turns; a failed install leaves the record as it was, so the next run tries again."""
    with locked(env.root / ".lock", "the ingestion environment", INSTALL_WAIT_SECONDS):
        if not env.python.exists():
            say(f"making {env.path}: DataHub's sources run apart, their pins would rewrite this environment")
            _must(run, [sys.executable, "-m", "venv", str(env.path)], "creating the ingestion environment")
        had_extras, had_packages = env.installed()
        need_extras, need_packages = had_extras | set(extras), had_packages | set(packages)
        if (need_extras, need_packages) != (had_extras, had_packages) or not env.datahub.exists():
            wanted = [env.requirement(need_extras), *sorted(need_packages)]
            say(f"installing {' '.join(wanted)} into {env.path}")
            _must(run, [str(env.python), "-m", "pip", "install", "-qq", *wanted], f"installing {' '.join(wanted)}")
            env.record.write_text(json.dumps({"extras": sorted(need_extras), "packages": sorted(need_packages)}),
                                  encoding="utf-8")
        _link_recall(env)


def _link_recall(env: IngestEnv) -> None:
    """A folder holding a link to this ``recall_dagster`` alone, named by a path file of the environment."""
    package = Path(__file__).resolve().parent
    folder = env.path / "recall-sink"
    folder.mkdir(exist_ok=True)
    link = folder / package.name
    if link.is_symlink() and link.resolve() == package:
        return
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(package, target_is_directory=True)
    for site in env.path.glob("lib/python*/site-packages"):
        (site / "recall-sink.pth").write_text(f"{folder}\n", encoding="utf-8")


def ingest(env: IngestEnv, recipe: Path, run: Run = _run, options: Sequence[str] = ()) -> None:
    """``datahub ingest -c RECIPE [OPTIONS]`` in the environment, its progress on this terminal (or where
    ``run`` puts it)."""
    _must(run, [str(env.datahub), "ingest", "-c", str(recipe), *options], f"datahub ingest -c {recipe}")


def _must(run: Run, command: Sequence[str], what: str) -> None:
    code = run(command)
    if code != 0:
        raise StackError(f"{what} failed (exit {code}); its own lines above say why")
