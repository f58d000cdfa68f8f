"""The Postgres warehouse: an embedded PostgreSQL 16 (``pgserver``) or the team's own.

The embedded server listens on a unix socket only, so it never competes for a TCP
port and two checkouts on one machine cannot collide. It outlives the process
that started it (dbt, Dagster runs and the CLI all share it) and is stopped only
on request. When ``RECALL_WAREHOUSE_URL`` is set Recall never starts or stops a
server: the team's Postgres is used as given.
"""

from __future__ import annotations

import os
import pwd
import subprocess
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import psutil
import psycopg2
from psycopg2 import sql
from psycopg2.extensions import connection as PgConnection
from psycopg2.extensions import parse_dsn

from recall_dagster.errors import ConfigError, ServiceUnreachable, StackError
from recall_dagster.files import locked
from recall_dagster.settings import Settings

WAREHOUSE_LOCK_WAIT_SECONDS = 600  # a first start initialises a cluster; another step waits that long for it

with warnings.catch_warnings():
    # pgserver asks platformdirs for a runtime dir at import; the XDG fallback warning is noise.
    warnings.simplefilter("ignore", UserWarning)
    import pgserver
    from pgserver.utils import PostmasterInfo

WAREHOUSE_DB = "warehouse"
CONNECT_TIMEOUT_S = 5


@dataclass(frozen=True)
class Warehouse:
    """How to reach the warehouse; ``host`` is the socket directory for the embedded server."""

    host: str
    port: int
    user: str
    password: str
    database: str
    managed: bool  # True when Recall started this server and may stop it
    pid: int | None = None

    @property
    def url(self) -> str:
        """A libpq URI that psycopg2 and SQLAlchemy both accept."""
        auth = quote(self.user, safe="") + (f":{quote(self.password, safe='')}" if self.password else "")
        if self.host.startswith("/"):
            return f"postgresql://{auth}@/{self.database}?host={quote(self.host, safe='/')}&port={self.port}"
        return f"postgresql://{auth}@{self.host}:{self.port}/{self.database}"

    @property
    def where(self) -> str:
        """Human wording of the address for error messages."""
        place = f"socket {self.host}" if self.host.startswith("/") else f"{self.host}:{self.port}"
        return place if self.managed else f"{place} (RECALL_WAREHOUSE_URL)"

    def connect(self, database: str | None = None) -> PgConnection:
        """Open a psycopg2 connection; a server that does not answer is ServiceUnreachable."""
        try:
            return psycopg2.connect(
                host=self.host,
                port=self.port,
                user=self.user,
                password=self.password or None,
                dbname=database or self.database,
                connect_timeout=CONNECT_TIMEOUT_S,
            )
        except psycopg2.OperationalError as err:
            reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            if "authentication failed" in reason or "does not exist" in reason:
                raise ConfigError(f"the warehouse at {self.where} refused the connection: {reason}") from err
            raise ServiceUnreachable(f"the warehouse at {self.where} did not answer: {reason}") from err


def ensure_warehouse(settings: Settings) -> Warehouse:
    """Return a reachable warehouse, starting the embedded server only if it is not running."""
    if settings.warehouse_url:
        warehouse = _external(settings.warehouse_url)
        warehouse.connect().close()
        return warehouse
    settings.ensure_home()
    with _home_lock(settings):
        info = _running_postmaster(settings.pg_data) or _start(settings.pg_data)
        warehouse = Warehouse(
            host=str(info.socket_dir),
            port=info.port or 5432,
            user="postgres",
            password="",
            database=WAREHOUSE_DB,
            managed=True,
            pid=info.pid,
        )
        _ensure_database(warehouse)
    return warehouse


def stop_warehouse(settings: Settings) -> bool:
    """Stop the embedded server; True if one was running. A team's Postgres is never stopped."""
    if settings.warehouse_url or not settings.pg_data.exists():
        return False
    with _home_lock(settings):
        if _running_postmaster(settings.pg_data) is None:
            return False
        try:
            pgserver.pg_ctl(["-w", "-m", "fast", "stop"], pgdata=settings.pg_data, user=_server_user(settings.pg_data))
        except subprocess.CalledProcessError as err:
            raise StackError(
                f"could not stop the embedded PostgreSQL in {settings.pg_data}; see {settings.pg_data / 'log'}"
            ) from err
    return True


def _external(url: str) -> Warehouse:
    """Parse RECALL_WAREHOUSE_URL (libpq URI or key=value DSN, SQLAlchemy driver suffix allowed)."""
    scheme, sep, rest = url.partition("://")
    dsn = f"{scheme.split('+')[0]}{sep}{rest}" if sep else url
    try:
        parts = parse_dsn(dsn)
    except psycopg2.ProgrammingError as err:
        raise ConfigError(f"RECALL_WAREHOUSE_URL is not a Postgres URL: {err}".strip()) from err
    user = parts.get("user") or pwd.getpwuid(os.geteuid()).pw_name
    return Warehouse(
        host=parts.get("host") or "localhost",
        port=int(parts.get("port") or 5432),
        user=user,
        password=parts.get("password") or "",
        database=parts.get("dbname") or user,
        managed=False,
    )


@contextmanager
def _home_lock(settings: Settings) -> Iterator[None]:
    """Serialise start/stop across processes: parallel Dagster steps all call ensure_warehouse."""
    with locked(settings.home / ".pg.lock", "the embedded warehouse", WAREHOUSE_LOCK_WAIT_SECONDS):
        yield


def _running_postmaster(pg_data: Path) -> PostmasterInfo | None:
    """The live postmaster for pg_data, or None.

    postmaster.pid can outlive its server (crash, reboot, a zombie nobody reaped),
    so the pid is trusted only if it is a live postgres process.
    """
    if not (pg_data / "postmaster.pid").exists():
        return None
    try:
        info = PostmasterInfo.read_from_pgdata(pg_data)
    except (AssertionError, ValueError):  # a half-written pid file: the server is starting or died starting
        return None
    if info is None or info.process is None or info.status != "ready":
        return None
    try:
        alive = info.process.name() == "postgres" and info.process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return None
    return info if alive else None


def _start(pg_data: Path) -> PostmasterInfo:
    """initdb if needed and start; pgserver runs postgres as its own user when we are root."""
    try:
        server = pgserver.get_server(pg_data, cleanup_mode=None)
        # A handle cached in this process from before stop_warehouse() must start again.
        server.ensure_postgres_running()
        return server.get_postmaster_info()
    except (subprocess.SubprocessError, OSError, RuntimeError, AssertionError) as err:
        raise StackError(
            f"could not start the embedded PostgreSQL in {pg_data} ({err}); "
            f"its log is {pg_data / 'log'}:\n{_log_tail(pg_data)}"
        ) from err


def _log_tail(pg_data: Path, lines: int = 15) -> str:
    log = pg_data / "log"
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:]) if log.exists() else "(no log)"


def _server_user(pg_data: Path) -> str | None:
    """pg_ctl refuses to run as root; as root it must run as the owner of the data directory."""
    return pwd.getpwuid(pg_data.stat().st_uid).pw_name if os.geteuid() == 0 else None


def _ensure_database(warehouse: Warehouse) -> None:
    conn = warehouse.connect(database="postgres")
    try:
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute("SELECT 1 FROM pg_database WHERE datname = %s", (warehouse.database,))
            if cur.fetchone() is None:
                cur.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(warehouse.database)))
    finally:
        conn.close()
