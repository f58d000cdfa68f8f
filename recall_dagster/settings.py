"""Where runtime state lives and which services to talk to, from the environment.

All state sits under ``RECALL_HOME`` so a ``reset`` is one directory removal and
two checkouts never share a database by accident.
"""

from __future__ import annotations

import math
import os
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterator, Literal

from recall_dagster.errors import ConfigError
from recall_dagster.files import locked

REPO_ROOT = Path(__file__).resolve().parent.parent

# The stores one command keeps from its first read to its last write, so two commands on them take turns: what a
# write-back remembers (pending writes, capabilities, notifications, events sent), the incident ledger, and a
# rollback's plan while it moves the aliases.  Every
# other record under RECALL_HOME is replaced whole (snapshots, verdicts, evidence) or under its own short lock
# (baselines, shard parts, acknowledgements): scans, shards and reports never wait on one another.
HeldStore = Literal["writeback", "incidents", "rollback"]


def _default_home() -> Path:
    if (REPO_ROOT / "pyproject.toml").exists():
        return REPO_ROOT / ".recall"
    return Path.cwd() / ".recall"


def lock_wait_seconds(value: str | None) -> float:
    """``RECALL_LOCK_WAIT_SECONDS`` read: 60 when unset; anything but a finite number of seconds >= 0 refused."""
    if not value:
        return 60.0
    try:
        seconds = float(value)
    except ValueError:
        raise ConfigError(f"RECALL_LOCK_WAIT_SECONDS={value!r} is not a number of seconds") from None
    if not 0 <= seconds < math.inf:
        raise ConfigError(f"RECALL_LOCK_WAIT_SECONDS={value!r} must be a finite number of seconds, not negative")
    return seconds


def env_home() -> Path:
    """RECALL_HOME as the environment names it, else the default."""
    return Path(os.environ.get("RECALL_HOME") or _default_home()).expanduser().resolve()


@dataclass(frozen=True)
class Settings:
    """Resolved locations of every service; immutable so it can be passed around freely."""

    home: Path
    graph: str
    gms_token: str | None = None
    warehouse_url: str | None = None
    mlflow_tracking_uri: str | None = None
    lock_wait_seconds: float = 60.0  # how long a writer waits for another of the same store

    @classmethod
    def from_env(cls, **overrides: Any) -> "Settings":
        home = env_home()
        settings = cls(
            home=home,
            graph=os.environ.get("RECALL_GRAPH") or str(home / "datahub.db"),
            gms_token=os.environ.get("DATAHUB_GMS_TOKEN") or None,
            warehouse_url=os.environ.get("RECALL_WAREHOUSE_URL") or None,
            mlflow_tracking_uri=os.environ.get("MLFLOW_TRACKING_URI") or None,
            lock_wait_seconds=lock_wait_seconds(os.environ.get("RECALL_LOCK_WAIT_SECONDS")),
        )
        settings = replace(settings, **{k: v for k, v in overrides.items() if v is not None})
        return settings

    @classmethod
    def under(cls, home: Path) -> "Settings":
        """Every service embedded under ``home``; nothing is read from the environment (tests, tools)."""
        return cls(home=home, graph=str(home / "datahub.db"))

    @property
    def graph_is_remote(self) -> bool:
        return self.graph.startswith(("http://", "https://"))

    @property
    def pg_data(self) -> Path:
        return self.home / "pg"

    @property
    def dbt_dir(self) -> Path:
        """dbt's target/ and logs/ live here, never inside the checked-in project."""
        return self.home / "dbt"

    @property
    def mlflow_dir(self) -> Path:
        return self.home / "mlflow"

    @property
    def mlflow_uri(self) -> str:
        return self.mlflow_tracking_uri or f"sqlite:///{self.mlflow_dir / 'mlflow.db'}"

    @property
    def recipes_dir(self) -> Path:
        return self.home / "recipes"

    @property
    def state_dir(self) -> Path:
        return self.home / "state"

    @property
    def config_file(self) -> Path:
        """The estate's own ``recall.yaml``, laid over the shipped defaults when it exists."""
        return self.home / "recall.yaml"

    @property
    def evidence_dir(self) -> Path:
        return self.home / "evidence"

    @contextmanager
    def writing(self, store: HeldStore, what: str) -> Iterator[None]:
        """One writer of ``store`` at a time: a second waits ``lock_wait_seconds``, then stops before it has
        written anything (:func:`~recall_dagster.files.locked`)."""
        self.ensure_home()
        with locked(self.home / ".locks" / f"{store}.lock", what, self.lock_wait_seconds):
            yield

    def ensure_home(self) -> Path:
        """Create RECALL_HOME, failing with a message rather than a traceback."""
        try:
            self.home.mkdir(mode=0o700, parents=True, exist_ok=True)  # owner-only: kept state is signed beside it
            # a probe of this process's own: two commands starting together must not remove each other's
            with tempfile.NamedTemporaryFile(dir=self.home, prefix=".write-probe."):
                pass
        except OSError as err:
            raise ConfigError(
                f"RECALL_HOME {self.home} is not writable ({err.strerror}); "
                "point RECALL_HOME at a directory you can write to"
            ) from err
        return self.home
