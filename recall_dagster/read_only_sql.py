"""Reading a team's warehouse with no means to change it: row counts, and the training queries replays rerun.

Recall only ever reads a warehouse, and a replay runs SQL an MLflow run logged: text whoever can log to that
run wrote, executed with the credentials Recall was given. So every connection is opened for reading only, as
far as the database can be asked (PostgreSQL and Redshift: each transaction ``READ ONLY``; SQLite: the file
opened read-only; DuckDB: its read-only mode; any database: a transaction rolled back, never committed), and
each statement is stopped at a timeout (the server's own on PostgreSQL, Redshift and Snowflake; an interrupt
from a timer on an in-process database). A replay's SQL is also checked to be one read statement before it is
sent (:func:`why_not_a_read`): where a driver sends several statements in one call (psycopg2, DuckDB), a
smuggled ``COMMIT`` would end the read-only transaction, so the check reads a semicolon the way the most
eager of the warehouses' lexers would.
"""

from __future__ import annotations

import math
import os
import re
import threading
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterator
from urllib.parse import quote

from recall_dagster.errors import RecallError

if TYPE_CHECKING:
    from sqlalchemy.engine import URL, Connection
    from sqlalchemy.exc import DBAPIError

STATEMENT_TIMEOUT_SECONDS = 300.0
QUERY_CANCELED = "57014"  # PostgreSQL's SQLSTATE for a statement its statement_timeout stopped

READS = frozenset({"SELECT", "WITH", "VALUES", "TABLE"})
# Words that make a read write or lock wherever they stand in it: a writable CTE, SELECT ... INTO, FOR UPDATE.
WRITES = frozenset({"INSERT", "UPDATE", "DELETE", "MERGE", "INTO"})
# Where the warehouses' lexers part ways: a backslash that escapes a quote or does not, dollar quotes, # and //
# comments, triple quotes, backtick, acute and bracket names, line breaks that end a -- comment for some. Beside
# one, a semicolon read here as inside a string or comment may end a statement for the database.
LEXER_FORKS = re.compile(r"\\|\$|#|//|'{3}|\"{3}|`|\u00b4|\[|\r(?!\n)|[\v\f\x85\u2028\u2029]")
LINE_END = re.compile(r"[\r\n]")
WORD = re.compile(r"[^\W\d][\w$]*")


class ReadTimedOut(RecallError):
    """The database stopped a statement that ran past the read timeout."""


def why_not_a_read(sql: str) -> str | None:
    """Why ``sql`` is not exactly one read statement (SELECT, WITH ... SELECT, VALUES or TABLE), or None when it
    is: the only SQL Recall runs that its own code did not write. Comments and a closing semicolon may stand
    around it, and semicolons inside its strings and comments where every warehouse reads them alike."""
    statements: list[list[tuple[str, str]]] = [[]]
    hidden = nested = False  # a semicolon in a string, name or comment; a comment opened inside a comment
    for kind, text in _tokens(sql):
        if kind == ";":
            statements.append([])
        elif kind == "comment":
            hidden |= ";" in text
            nested |= text.startswith("/*") and "/*" in text[2:]
        else:
            hidden |= kind == "quoted" and ";" in text
            statements[-1].append((kind, text))
    statements = [statement for statement in statements if statement]
    if len(statements) != 1:
        kinds = ", ".join(_verb(statement) for statement in statements)
        return f"it holds {len(statements)} statements ({kinds})" if statements else "it holds no statement"
    if nested:
        return "it opens a comment inside a comment, which warehouses close at different places"
    forks = sorted(set(LEXER_FORKS.findall(sql)))
    if hidden and forks:
        return (f"it has a semicolon inside a string or comment beside {', '.join(map(repr, forks))}, which "
                "warehouses read differently: it may be more than one statement")
    [statement] = statements
    verb = _verb(statement)
    if verb not in READS:
        return f"it is {verb}, not a read"
    writes = sorted({text.upper() for kind, text in statement if kind == "word"} & WRITES)
    if writes:
        return f"its {verb} names {', '.join(writes)}: a read may not write or lock"
    return None


def _tokens(sql: str) -> Iterator[tuple[str, str]]:
    """``(kind, text)`` of each token as PostgreSQL reads standard SQL: word, quoted (a string or quoted name),
    comment, ``;``, ``(`` or other; whitespace is left out. In one pass: a quote or comment that is never
    closed runs to the end (a lexer that searched again from each opening took minutes on a crafted query)."""
    at, end = 0, len(sql)
    while at < end:
        char, pair = sql[at], sql[at:at + 2]
        if char.isspace():
            at += 1
            continue
        if pair == "--":
            line_end = LINE_END.search(sql, at)
            kind, upto = "comment", line_end.start() if line_end else end
        elif pair == "/*":
            close = sql.find("*/", at + 2)
            kind, upto = "comment", end if close < 0 else close + 2
        elif char in "'\"":
            kind, upto = "quoted", _closing(sql, at, char)
        elif word := WORD.match(sql, at):
            kind, upto = "word", word.end()
        else:
            kind, upto = (char if char in ";(" else "other"), at + 1
        yield kind, sql[at:upto]
        at = upto


def _closing(sql: str, at: int, quote: str) -> int:
    """Where the string or quoted name opened at ``at`` ends, a doubled quote read as one inside it."""
    stop = at + 1
    while (stop := sql.find(quote, stop)) >= 0:
        if sql[stop + 1:stop + 2] != quote:
            return stop + 1
        stop += 2
    return len(sql)


def _verb(statement: list[tuple[str, str]]) -> str:
    """The statement's first word, past any opening parentheses (``(SELECT 1) UNION (SELECT 2)``)."""
    words = [text for kind, text in statement if kind != "("]
    return words[0].upper()[:40] if words else "("


@contextmanager
def sql_connection(url: str, timeout_s: float = STATEMENT_TIMEOUT_SECONDS) -> Iterator["Connection"]:
    """One connection to any SQLAlchemy URL that can only read, each statement stopped after ``timeout_s``
    (:class:`ReadTimedOut`); given up after 5 s on Postgres; rolled back and the engine disposed after."""
    import sqlalchemy

    parsed = engine_url(url)
    backend = parsed.get_backend_name()
    connect_args = {"postgresql": {"connect_timeout": 5}, "duckdb": {"read_only": True}}.get(backend, {})
    if backend == "sqlite":
        parsed = _read_only_sqlite(parsed)
    engine = sqlalchemy.create_engine(parsed, connect_args=connect_args, poolclass=sqlalchemy.pool.NullPool)
    try:
        with engine.connect() as conn:
            if backend == "postgresql":
                # Set in the transaction, so undone by its rollback: a pooler's server session keeps nothing.
                conn.execution_options(postgresql_readonly=True)
                conn.exec_driver_sql(f"SET statement_timeout = {math.ceil(timeout_s * 1000)}")
            elif backend == "snowflake":
                conn.exec_driver_sql(f"ALTER SESSION SET STATEMENT_TIMEOUT_IN_SECONDS = {math.ceil(timeout_s)}")
            watchdog = _Interrupter(conn.connection.dbapi_connection, timeout_s)
            if watchdog.can_interrupt:
                sqlalchemy.event.listen(conn, "before_cursor_execute", watchdog.restart)
            try:
                yield conn
            except Exception as err:
                driver = database_error(err)
                if driver is not None and (watchdog.fired or getattr(driver.orig, "pgcode", None) == QUERY_CANCELED):
                    raise ReadTimedOut(f"ran past the read timeout of {timeout_s:g} s and was stopped") from None
                raise
            finally:
                watchdog.stop()
    finally:
        engine.dispose()


def engine_url(url: str) -> "URL":
    """``url`` as SQLAlchemy is to open it. A Postgres URL that names no driver is opened with psycopg2 where
    psycopg (3) is not installed: SQLAlchemy 2.1 takes psycopg for it where 2.0 took psycopg2, which is what
    Recall's ``postgres`` extra brings, so the same URL reads the same warehouse on both."""
    from importlib.util import find_spec

    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    if parsed.drivername == "postgresql" and find_spec("psycopg") is None and find_spec("psycopg2") is not None:
        return parsed.set(drivername="postgresql+psycopg2")
    return parsed


def database_error(err: BaseException) -> "DBAPIError | None":
    """The driver's error ``err`` is or wraps: pandas 3's ``read_sql_query`` raises its own ``DatabaseError``
    from SQLAlchemy's, where pandas 2 let SQLAlchemy's through."""
    import sqlalchemy

    for candidate in (err, err.__cause__):
        if isinstance(candidate, sqlalchemy.exc.DBAPIError):
            return candidate
    return None


def _read_only_sqlite(url: "URL") -> "URL":
    """The same SQLite database opened read-only (``mode=ro``): SQLite refuses every write, and a path naming no
    database is an error rather than a new empty file. An in-memory database is new and empty: nothing to keep."""
    if url.query.get("uri"):
        return url.update_query_dict({"mode": "ro"})
    if url.database in (None, "", ":memory:"):
        return url
    path = quote(os.path.abspath(str(url.database)))
    return url.set(database=f"file:{path}").update_query_dict({"mode": "ro", "uri": "true"})


class _Interrupter:
    """Interrupts the statement an in-process database (SQLite, DuckDB) is running once it has run ``seconds``:
    each statement, the fetching of its rows included, until the next one starts or the connection is given
    back. A database with a server stops its own statements."""

    def __init__(self, dbapi_connection: Any, seconds: float) -> None:
        self.dbapi_connection, self.seconds = dbapi_connection, seconds
        self.can_interrupt = callable(getattr(dbapi_connection, "interrupt", None))
        self.lock = threading.Lock()
        self.timer: threading.Timer | None = None
        self.statement = 0  # counts statements started, so a late timer of an earlier one does nothing
        self.fired = False

    def restart(self, *_: object) -> None:
        with self.lock:
            self._cancel()
            self.timer = threading.Timer(self.seconds, self._fire, (self.statement,))
            self.timer.daemon = True
            self.timer.start()

    def stop(self) -> None:
        with self.lock:
            self._cancel()

    def _cancel(self) -> None:
        self.statement += 1
        if self.timer is not None:
            self.timer.cancel()

    def _fire(self, statement: int) -> None:
        with self.lock:
            if statement == self.statement:
                self.fired = True
                self.dbapi_connection.interrupt()
