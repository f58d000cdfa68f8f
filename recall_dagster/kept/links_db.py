"""The last scan's links in a SQLite file, asked by key and changed in place.

Who read each entity, each model's groups and the far-side links resolving
asked about: 600,000 reader pairs and 90,000 answers at 10,000 models, of which
a rescan after one changed dataset asks a few dozen.  Kept as pickles they
were loaded whole and written back whole (a sixth of that rescan); here a
rescan reads the rows it asks for and writes the rows its change touched, in
one transaction that also moves the file's token, so the file is always at one
scan's links or another's, never between (a scan that dies mid-change leaves
SQLite's journal, which the next write rolls back).  A full scan writes a new
file (built in memory) and renames it in, with any journal of the old one
removed first.  Like the other snapshot files it is a cache: a file that is
missing, damaged, written by other code or at another token is not read.
"""

from __future__ import annotations

import json
import sqlite3
from array import array
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Iterable, Iterator, Mapping

from recall_dagster.errors import ConfigError
from recall_dagster.kept.links import Chosen, ChangedLinks, Key, KeptLinks, Links, LinksChange, LinksMoved
from recall_dagster.files import write_atomically

_SCHEMA = """
CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE models (id INTEGER PRIMARY KEY, urn TEXT NOT NULL UNIQUE, groups TEXT NOT NULL, chosen TEXT NOT NULL);
CREATE TABLE members (grp TEXT NOT NULL, model INTEGER NOT NULL, PRIMARY KEY (grp, model)) WITHOUT ROWID;
CREATE TABLE readers (entity TEXT PRIMARY KEY, models BLOB NOT NULL) WITHOUT ROWID;
CREATE TABLE incoming (rel TEXT NOT NULL, target TEXT NOT NULL, sources TEXT NOT NULL,
                       PRIMARY KEY (rel, target)) WITHOUT ROWID;
CREATE TABLE holders (source TEXT NOT NULL, rel TEXT NOT NULL, target TEXT NOT NULL,
                      PRIMARY KEY (source, rel, target)) WITHOUT ROWID;
"""
_IDS = "q"  # model ids in a reader row: 8 bytes each, native order (the file never leaves this machine)


class StoredLinks:
    """The links kept in ``path`` at ``token``; each question is one read of the file, refused with
    :class:`LinksMoved` if another scan moved the file on since."""

    def __init__(self, path: Path, token: str) -> None:
        self.path, self.token = path, token
        self._models: frozenset[str] | None = None

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        try:
            with closing(sqlite3.connect(f"{self.path.as_uri()}?mode=ro", uri=True, isolation_level=None)) as db:
                db.execute("BEGIN")
                if _meta(db).get("token") != self.token:
                    raise LinksMoved(f"{self.path} moved on from token {self.token}")
                yield db
        except sqlite3.Error as err:
            raise LinksMoved(f"{self.path}: {err}") from err

    def models(self) -> frozenset[str]:
        if self._models is None:  # asked twice a rescan; a later question fails if the file moved on since
            with self._reading() as db:
                self._models = frozenset(u for (u,) in db.execute("SELECT urn FROM models"))
        return self._models

    def chosen(self, models: Iterable[str]) -> dict[str, Chosen]:
        with self._reading() as db:
            rows = db.execute("SELECT urn, groups, chosen FROM models WHERE urn IN (SELECT value FROM json_each(?))",
                              [_listed(models)])
            return {u: _chosen(g, c) for u, g, c in rows}

    def members(self, groups: Iterable[str]) -> dict[str, tuple[str, ...]]:
        found: dict[str, list[str]] = {}
        with self._reading() as db:
            for group, urn in db.execute(
                "SELECT grp, urn FROM members JOIN models ON models.id = members.model "
                "WHERE grp IN (SELECT value FROM json_each(?)) ORDER BY grp, model", [_listed(groups)]
            ):
                found.setdefault(group, []).append(urn)
        return {g: tuple(u) for g, u in found.items()}

    def readers(self, entities: Iterable[str]) -> dict[str, tuple[str, ...]]:
        with self._reading() as db:
            rows = db.execute("SELECT entity, models FROM readers WHERE entity IN (SELECT value FROM json_each(?))",
                              [_listed(entities)]).fetchall()
            ids = {e: _ids(blob) for e, blob in rows}
            wanted = sorted({i for found in ids.values() for i in found})
            urns = dict(db.execute("SELECT id, urn FROM models WHERE id IN (SELECT value FROM json_each(?))",
                                   [json.dumps(wanted)]))
        return {e: tuple(urns[i] for i in found if i in urns) for e, found in ids.items()}

    def incoming(self, keys: Iterable[Key]) -> dict[Key, tuple[str, ...]]:
        with self._reading() as db:
            return _incoming(db, keys)

    def holding(self, sources: Iterable[str]) -> set[Key]:
        with self._reading() as db:
            return {(r, t) for r, t in db.execute(
                "SELECT rel, target FROM holders WHERE source IN (SELECT value FROM json_each(?))", [_listed(sources)])}

    def relationships(self) -> frozenset[str]:
        with self._reading() as db:
            return frozenset(json.loads(_meta(db).get("relationships", "[]")))

    def whole(self) -> Links:
        with self._reading() as db:
            urns = {i: u for i, u in db.execute("SELECT id, urn FROM models")}
            models = {u: _chosen(g, c) for u, g, c in db.execute("SELECT urn, groups, chosen FROM models")}
            readers = {e: tuple(urns[i] for i in _ids(blob) if i in urns)
                       for e, blob in db.execute("SELECT entity, models FROM readers")}
            incoming = {(r, t): tuple(json.loads(s))
                        for r, t, s in db.execute("SELECT rel, target, sources FROM incoming")}
        return Links(models, readers, incoming)


def opened(path: Path, key: str, token: str, stamp: str) -> StoredLinks | None:
    """The links in ``path`` if they were kept for ``key`` at ``token`` by code stamped ``stamp``."""
    if not path.exists():
        return None
    try:
        with closing(sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)) as db:
            meta = _meta(db)
    except sqlite3.Error:
        return None
    if (meta.get("key"), meta.get("token"), meta.get("stamp")) != (key, token, stamp):
        return None
    return StoredLinks(path, token)


def keep(path: Path, key: str, token: str, stamp: str, links: KeptLinks) -> None:
    """Keep ``links`` at ``token`` in ``path``: the change alone when they are a change on the links ``path``
    holds now, else all of them in a new file renamed in."""
    if isinstance(links, ChangedLinks) and isinstance(links.base, StoredLinks) and links.base.path == path \
            and _changed_in_place(path, key, stamp, links.base.token, token, links.change):
        return
    whole = links.whole()
    with closing(sqlite3.connect(":memory:", isolation_level=None)) as db:
        db.executescript(_SCHEMA)
        db.execute("BEGIN")
        _put_whole(db, whole)
        _put_meta(db, {"key": key, "token": token, "stamp": stamp,
                       "relationships": json.dumps(sorted({r for r, _ in whole.asked}))})
        db.execute("COMMIT")
        content = db.serialize()
    journal = Path(f"{path}-journal")  # left by a scan that died changing the old file: it would roll back into this
    try:
        journal.unlink(missing_ok=True)
    except OSError as err:
        raise ConfigError(f"cannot remove {journal}: {err.strerror}; check RECALL_HOME") from err
    write_atomically(path, content, "closure snapshot links")


def _changed_in_place(path: Path, key: str, stamp: str, base: str, token: str, change: LinksChange) -> bool:
    """Apply ``change`` to ``path`` in one transaction if it still holds the links at ``base``."""
    try:
        with closing(sqlite3.connect(path, isolation_level=None)) as db:
            db.execute("PRAGMA synchronous = OFF")  # not synced, as the pickles beside it (a sync was 19 ms)
            db.execute("BEGIN IMMEDIATE")
            meta = _meta(db)
            if (meta.get("key"), meta.get("token"), meta.get("stamp")) != (key, base, stamp):
                db.execute("ROLLBACK")
                return False
            _put_change(db, change)
            relationships = set(json.loads(meta.get("relationships", "[]"))) | {r for r, _ in change.incoming}
            _put_meta(db, {"token": token, "relationships": json.dumps(sorted(relationships))})
            db.execute("COMMIT")
            return True
    except sqlite3.Error:
        return False  # damaged or locked: written whole instead


def _put_whole(db: sqlite3.Connection, links: Links) -> None:
    ids = {u: i for i, u in enumerate(sorted(links.models_read), start=1)}
    db.executemany("INSERT INTO models (id, urn, groups, chosen) VALUES (?, ?, ?, ?)",
                   ((ids[u], u, json.dumps(g), _listed(c)) for u, (g, c) in links.models_read.items()))
    db.executemany("INSERT INTO members VALUES (?, ?)",
                   ((g, ids[u]) for u, (groups, _) in links.models_read.items() for g in set(groups)))
    db.executemany("INSERT INTO readers VALUES (?, ?)",
                   ((e, array(_IDS, (ids[u] for u in urns)).tobytes()) for e, urns in links.readers_of.items()))
    _put_incoming(db, links.asked, {})


def _put_change(db: sqlite3.Connection, change: LinksChange) -> None:
    changed = sorted(change.models)
    ids = dict(db.execute("SELECT urn, id FROM models WHERE urn IN (SELECT value FROM json_each(?))",
                          [json.dumps(changed)]))
    db.executemany("DELETE FROM members WHERE model = ?", ((ids[u],) for u in changed if u in ids))
    for urn in changed:
        chosen = change.models[urn]
        if chosen is None:
            if urn in ids:
                db.execute("DELETE FROM models WHERE id = ?", [ids.pop(urn)])
        elif urn in ids:
            db.execute("UPDATE models SET groups = ?, chosen = ? WHERE id = ?",
                       [json.dumps(chosen[0]), _listed(chosen[1]), ids[urn]])
        else:
            ids[urn] = db.execute("INSERT INTO models (urn, groups, chosen) VALUES (?, ?, ?)",
                                  [urn, json.dumps(chosen[0]), _listed(chosen[1])]).lastrowid
    db.executemany("INSERT INTO members VALUES (?, ?)",
                   ((g, ids[u]) for u in changed if (c := change.models[u]) is not None for g in set(c[0])))
    readers = sorted(change.readers.items())
    wanted = sorted({u for _, urns in readers for u in urns} - ids.keys())
    ids.update(db.execute("SELECT urn, id FROM models WHERE urn IN (SELECT value FROM json_each(?))",
                          [json.dumps(wanted)]))
    db.executemany("DELETE FROM readers WHERE entity = ?", ((e,) for e, urns in readers if not urns))
    db.executemany("INSERT OR REPLACE INTO readers VALUES (?, ?)",
                   ((e, array(_IDS, (ids[u] for u in urns)).tobytes()) for e, urns in readers if urns))
    _put_incoming(db, dict(sorted(change.incoming.items())), _incoming(db, change.incoming))


def _put_incoming(db: sqlite3.Connection, answers: Mapping[Key, tuple[str, ...]],
                  before: Mapping[Key, tuple[str, ...]]) -> None:
    db.executemany("DELETE FROM holders WHERE source = ? AND rel = ? AND target = ?",
                   ((s, r, t) for (r, t), sources in before.items() for s in sources))
    db.executemany("INSERT OR REPLACE INTO incoming VALUES (?, ?, ?)",
                   ((r, t, json.dumps(list(s))) for (r, t), s in answers.items()))
    db.executemany("INSERT OR IGNORE INTO holders VALUES (?, ?, ?)",
                   ((s, r, t) for (r, t), sources in answers.items() for s in sources))


def _incoming(db: sqlite3.Connection, keys: Iterable[Key]) -> dict[Key, tuple[str, ...]]:
    """Of the far-side links ``keys`` name, those kept: their sources."""
    by_relationship: dict[str, list[str]] = {}
    for relationship, target in keys:
        by_relationship.setdefault(relationship, []).append(target)
    return {(r, t): tuple(json.loads(s)) for r, targets in sorted(by_relationship.items())
            for t, s in db.execute("SELECT target, sources FROM incoming WHERE rel = ? "
                                   "AND target IN (SELECT value FROM json_each(?))", [r, _listed(targets)])}


def _put_meta(db: sqlite3.Connection, values: dict[str, str]) -> None:
    db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", sorted(values.items()))


def _meta(db: sqlite3.Connection) -> dict[str, str]:
    return dict(db.execute("SELECT name, value FROM meta"))


def _chosen(groups: str, chosen: str) -> Chosen:
    return tuple(json.loads(groups)), frozenset(json.loads(chosen))


def _ids(blob: bytes) -> array:
    found = array(_IDS)
    found.frombytes(blob)
    return found


def _listed(values: Iterable[str]) -> str:
    return json.dumps(sorted(values))
