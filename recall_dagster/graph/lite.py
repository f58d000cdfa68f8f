"""The metadata graph as a DataHub Lite file (the SDK's SQLite engine).

The file is the one ``datahub ingest`` writes with the ``datahub-lite`` sink and
that ``datahub lite get/ls`` read, so Recall, DataHub's CLI and its ingestion
sources share one embedded graph.  Writes store the rows the SDK's own
:class:`SqliteLite` stores, by the same rules, a batch per transaction
(:mod:`recall_dagster.graph.lite_batch`), so the versioning and the browse
index stay what DataHub's own tools expect.  Reads
are batched SQL over its ``metadata_aspect_v2`` table, where version 0 mirrors
the latest value of each aspect and versions 1..n keep the history.

Lite stores whole aspects only, so a PATCH proposal is merged into the stored
aspect the way GMS would (:mod:`recall_dagster.graph.patch`) and written as an
upsert; ingest with :class:`~recall_dagster.graph.lite_sink.RecallLiteSink` to
get the same for the proposals DataHub's own ``datahub-lite`` sink drops.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence, Union, cast

from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.emitter.mcp_builder import mcps_from_mce
from datahub.emitter.serialization_helper import post_json_transform, pre_json_transform
from datahub.lite.sqlite_lite_config import SqliteLiteConfig
from datahub.metadata.schema_classes import (
    ASPECT_NAME_MAP,
    ChangeTypeClass,
    MetadataChangeEventClass,
    MetadataChangeProposalClass,
    _Aspect,
)

from recall_dagster.errors import GraphError
from recall_dagster.graph.decode import TRANSFORM_MARKERS, aspect_from_text, value_reader
from recall_dagster.graph.lite_batch import BatchingLite, upsert
from recall_dagster.graph.patch import apply_patch, decode_patch, patchable_class
from recall_dagster.graph.port import (
    AspectMap,
    AspectT,
    Changes,
    Direction,
    WriteReport,
    batches,
    listed_by_default,
    location_of,
    requested_names,
    values_at,
)
from recall_dagster.graph.relationships import carrying_aspects, extract_targets, outgoing

_SQLITE_MAGIC = b"SQLite format 3\x00"
_DUCKDB_MAGIC = b"DUCK"  # at byte 8 of a DuckDB file
_ASPECT_TABLE = "metadata_aspect_v2"
_URNS_PER_HISTORY_QUERY = 2_000  # one windowed query per this many URNs: the rows of one batch in memory at a time
WRITE_BATCH = 5_000  # proposals per transaction: a second or so of writing

Emittable = Union[MetadataChangeProposalWrapper, MetadataChangeProposalClass, MetadataChangeEventClass]


def _check_file(path: Path, read_only: bool) -> None:
    """Refuse anything but a DataHub Lite SQLite file before the SDK touches it.

    The SDK would otherwise fail deep inside with a bare sqlite error, or worse,
    add its tables to somebody else's SQLite database when opened for write.
    """
    if not path.exists():
        if read_only:
            raise GraphError(
                f"no DataHub Lite graph at {path}: the file does not exist "
                "(ingest metadata first, or point RECALL_GRAPH at an existing graph)"
            )
        return
    if path.is_dir():
        raise GraphError(f"{path} is a directory, not a DataHub Lite graph file")
    try:
        with path.open("rb") as fh:
            head = fh.read(len(_SQLITE_MAGIC))
    except OSError as err:
        raise GraphError(f"cannot read DataHub Lite graph {path}: {err.strerror}") from err
    if not head:
        if read_only:
            raise GraphError(f"{path} is empty, not a DataHub Lite graph")
        return  # an empty file is an empty SQLite database: the SDK initialises it
    if head[8:12] == _DUCKDB_MAGIC:
        raise GraphError(
            f"{path} is a DuckDB DataHub Lite file; Recall reads the sqlite engine's "
            "files (the datahub-lite sink's default `type: sqlite`): re-ingest into a new file"
        )
    if head != _SQLITE_MAGIC:
        raise GraphError(f"{path} is not a SQLite database, so not a DataHub Lite graph")
    # A write killed part-way leaves a hot rollback journal; SQLite rolls it back on the next read, which a
    # read-only connection cannot do ("attempt to write a readonly database"): the probe then opens read-write,
    # and the file is whole again before anyone reads it.
    journal = path.with_name(path.name + "-journal")
    mode = "rw" if journal.exists() and journal.stat().st_size > 0 else "ro"
    try:
        with closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode={mode}", uri=True)) as probe:
            tables = {row[0] for row in probe.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.Error as err:
        hint = " (an interrupted write left a journal only a writable file can roll back)" if mode == "rw" else ""
        raise GraphError(f"{path} is a damaged SQLite file: {err}{hint}") from err
    if _ASPECT_TABLE not in tables and (tables or read_only):
        found = ", ".join(sorted(tables)) or "no tables"
        raise GraphError(
            f"{path} is a SQLite database but not a DataHub Lite graph "
            f"(no {_ASPECT_TABLE} table; it has {found})"
        )


def _file_seen(path: Path) -> str:
    """The graph file as the filesystem and SQLite's own header tell it (inode, size, modification time, and
    the header's file change counter, which SQLite raises on every committed write in rollback-journal mode),
    or empty when that cannot prove a later write: a file in WAL mode (its writes land in the ``-wal`` file,
    and the counter may stay put) or one that cannot be read."""
    try:
        with path.open("rb") as file:
            header = file.read(100)
            stat = os.fstat(file.fileno())
    except OSError:
        return ""
    if len(header) < 28 or header[18] != 1 or header[19] != 1 or path.with_name(path.name + "-wal").exists():
        return ""  # WAL mode, or no SQLite header to read
    return f"{stat.st_ino}.{stat.st_size}.{stat.st_mtime_ns}.{int.from_bytes(header[24:28], 'big')}"


class LiteGraph:
    """:class:`~recall_dagster.graph.port.MetadataGraph` over a DataHub Lite SQLite file.

    Also a DataHub emitter (``emit``/``flush``), so SDK helpers that take an
    emitter (``DataProcessInstance.emit``...) can write straight into the file.
    """

    def __init__(self, path: str | os.PathLike[str], *, read_only: bool = False) -> None:
        self._path = Path(location_of(str(path)))
        self._read_only = read_only
        self._dirty = False
        _check_file(self._path, read_only)
        try:
            if not read_only:
                self._path.parent.mkdir(parents=True, exist_ok=True)
            self._lite: BatchingLite | None = BatchingLite(
                SqliteLiteConfig(file=str(self._path), read_only=read_only)
            )
        except (sqlite3.Error, OSError) as err:
            raise GraphError(f"cannot open DataHub Lite graph {self._path}: {err}") from err

    @property
    def location(self) -> str:
        return str(self._path)

    # -- reads -----------------------------------------------------------------

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        if self._lite is None:
            raise GraphError(f"DataHub Lite graph {self._path} is closed")
        try:
            return self._lite.sqlite_client.execute(sql, params).fetchall()
        except sqlite3.Error as err:
            raise GraphError(f"reading DataHub Lite graph {self._path} failed: {err}") from err

    def _decode(self, urn: str, aspect_name: str, text: str) -> _Aspect:
        try:
            return aspect_from_text(ASPECT_NAME_MAP[aspect_name], text)
        except Exception as err:
            raise GraphError(
                f"{self._path}: aspect {aspect_name} of {urn} does not fit the SDK's schema ({err})"
            ) from err

    def get_aspects(
        self, urns: Sequence[str], aspects: Sequence[type[_Aspect]] | None = None
    ) -> AspectMap:
        names = requested_names(aspects)
        result: AspectMap = {urn: {} for urn in urns}
        if not result:
            return result
        sql = (
            f"SELECT urn, aspect_name, metadata FROM {_ASPECT_TABLE} "
            "WHERE version = 0 AND urn IN (SELECT value FROM json_each(?))"
        )
        params = [json.dumps(list(result))]
        if names is not None:
            sql += " AND aspect_name IN (SELECT value FROM json_each(?))"
            params.append(json.dumps(names))
        for urn, aspect_name, text in self._rows(sql, params):
            if names is not None or listed_by_default(aspect_name):
                result[urn][aspect_name] = self._decode(urn, aspect_name, text)
        return result

    def related(
        self,
        urns: Sequence[str],
        relationship: str,
        direction: Direction = "outgoing",
    ) -> dict[str, list[str]]:
        if direction == "outgoing":
            return outgoing(self.get_aspects(urns, carrying_aspects(relationship)), relationship)
        if direction != "incoming":
            raise ValueError(f"direction must be 'outgoing' or 'incoming', not {direction!r}")
        return self._incoming(urns, relationship)

    def _incoming(self, urns: Sequence[str], relationship: str) -> dict[str, list[str]]:
        """Scan only the carrying aspects, and only rows holding a target as one of their string values.

        A target is always a whole string value of the aspect, so each row's values
        are looked up in the targets (SQLite indexes the list once): linear in rows
        and targets, where searching every row's text for every target grew with
        their product.  The typed extraction afterwards is the real test.
        """
        sources: dict[str, set[str]] = {urn: set() for urn in urns}
        if not sources:
            return {}
        names = [a.ASPECT_NAME for a in carrying_aspects(relationship)]
        rows = self._rows(
            f"SELECT urn, aspect_name, metadata FROM {_ASPECT_TABLE} "
            "WHERE version = 0 AND aspect_name IN (SELECT value FROM json_each(?)) "
            "AND EXISTS (SELECT 1 FROM json_tree(metadata) AS v "
            "WHERE v.type = 'text' AND v.atom IN (SELECT value FROM json_each(?)))",
            [json.dumps(names), json.dumps(list(sources))],
        )
        for source, aspect_name, text in rows:
            for target in extract_targets(self._decode(source, aspect_name, text), relationship):
                if target in sources:
                    sources[target].add(source)
        return {urn: sorted(found) for urn, found in sources.items()}

    def timeseries(
        self, urns: Sequence[str], aspect: type[AspectT], limit: int = 100
    ) -> dict[str, list[AspectT]]:
        """Events newest first by ``timestampMillis``, from Lite's aspect versions, in one query per batch.

        Lite stores each event as a new version (version 0 is merely the last one
        written) and re-writing an older event adds a duplicate version, so equal
        events are collapsed.
        """
        result: dict[str, list[AspectT]] = {urn: [] for urn in urns}
        for urn, text in self._history(result, aspect, limit, "metadata"):  # decoded by its name: an ``aspect``
            result[urn].append(cast(AspectT, self._decode(urn, aspect.ASPECT_NAME, text)))
        return result

    def timeseries_values(
        self, urns: Sequence[str], aspect: type[_Aspect], paths: Sequence[str], limit: int = 100
    ) -> dict[str, list[tuple[Any, ...]]]:
        """The events :meth:`timeseries` reads, with only the values at ``paths`` taken out of each, by SQLite.

        An event whose text the SDK's transform would change (a union keyed by
        its branch's name) is decoded whole instead, so every value is the one
        the SDK's object holds.
        """
        readers = [value_reader(aspect, path) for path in paths]
        targets = list(paths) * (2 if len(paths) == 1 else 1)  # two paths or more: a JSON array, objects as JSON
        values = "json_extract(metadata, " + ", ".join(f"'$.{path}'" for path in targets) + ")"
        whole = " OR ".join(f"instr(metadata, '{marker}') > 0" for marker in TRANSFORM_MARKERS)
        result: dict[str, list[tuple[Any, ...]]] = {urn: [] for urn in urns}
        for urn, found, text in self._history(result, aspect, limit, f"{values}, CASE WHEN {whole} THEN metadata END"):
            if text is not None:
                result[urn].append(values_at(self._decode(urn, aspect.ASPECT_NAME, text), paths))
                continue
            try:
                result[urn].append(tuple(read(value) for read, value in zip(readers, json.loads(found))))
            except ValueError as err:
                raise GraphError(f"{self._path}: aspect {aspect.ASPECT_NAME} of {urn} does not fit the SDK's "
                                 f"schema ({err})") from None
        return result

    def _history(self, urns: Iterable[str], aspect: type[_Aspect], limit: int, select: str) -> Iterator[tuple]:
        """``urn, <select>`` of each URN's newest ``limit`` distinct events, newest first, a query per batch."""
        if aspect.get_aspect_type() != "timeseries":
            raise ValueError(f"{aspect.ASPECT_NAME} is not a timeseries aspect: use get_aspects()")
        if limit < 1:
            return
        for some in batches(urns, _URNS_PER_HISTORY_QUERY):
            yield from self._rows(
                f"SELECT urn, {select} FROM ("
                "  SELECT urn, metadata, ROW_NUMBER() OVER (PARTITION BY urn ORDER BY"
                "    CAST(json_extract(metadata, '$.timestampMillis') AS INTEGER) DESC, max(version) DESC) AS place"
                f"  FROM {_ASPECT_TABLE} WHERE urn IN (SELECT value FROM json_each(?)) AND aspect_name = ?"
                "  AND version > 0 GROUP BY urn, metadata"
                ") WHERE place <= ? ORDER BY urn, place",
                [json.dumps(some), aspect.ASPECT_NAME, limit],
            )

    def list_urns(self, entity_type: str) -> list[str]:
        """The URNs between ``urn:li:<type>:`` and ``urn:li:<type>;`` (the next string of that length): a range
        the aspect index answers, where matching a prefix read every row of the file."""
        return self._listed("urn >= ? AND urn < ?", [f"urn:li:{entity_type}:", f"urn:li:{entity_type};"])

    def _listed(self, which: str, params: list[str]) -> list[str]:
        """The URNs ``which`` picks that have a current aspect and are not marked removed, in order."""
        rows = self._rows(
            f"SELECT DISTINCT urn FROM {_ASPECT_TABLE} WHERE {which} AND version = 0 "
            f"AND urn NOT IN (SELECT urn FROM {_ASPECT_TABLE} WHERE {which} AND version = 0 "
            "AND aspect_name = 'status' AND json_extract(metadata, '$.removed') = 1) "
            "ORDER BY urn",
            [*params, *params],
        )
        return [row[0] for row in rows]

    def changes_since(self, token: str | None) -> Changes:
        """Entities with rows added since ``token``, told by SQLite row ids.

        Every write that changes an aspect adds a history row (an identical
        rewrite only refreshes version 0's ``lastObserved``) and the SDK never
        deletes one, so the rows past the newest row id a token saw are exactly
        what changed.  A token holds that row's identity and the row count too:
        a file rebuilt or edited in place, where rows vanished or the row the
        token saw is another, answers None rather than a wrong list.  It also
        holds the file as the filesystem and SQLite's header saw it
        (:func:`_file_seen`): when it is exactly as it was, nothing was
        committed since, and the rows are not counted again (counting them was
        most of the time an unchanged rescan spent asking the graph).
        """
        seen = token.split(":") if token is not None else []
        # Seen before the rows are counted: a write landing in between makes the next scan count again, never
        # lets it miss the write.
        on_disk = _file_seen(self._path)
        if token is not None and on_disk and len(seen) == 4 and seen[3] == on_disk:
            return Changes(token, frozenset())
        # two statements: a bare count(*) counts the index's entries without reading them, three times faster
        # than one statement that also takes the max (a row written between them makes the next scan's sum
        # disagree: a full read, never a missed change)
        newest = self._rows(f"SELECT coalesce(max(rowid), 0) FROM {_ASPECT_TABLE}")[0][0]
        count = self._rows(f"SELECT count(*) FROM {_ASPECT_TABLE}")[0][0]
        now = f"{newest}:{count}:{self._row_identity(newest)}:{on_disk}"
        try:
            seen_rowid, seen_rows, identity = int(seen[0]), int(seen[1]), seen[2]
        except (IndexError, ValueError):
            return Changes(now, None)
        added = self._rows(  # NOT INDEXED: grouping by urn, SQLite walked the whole urn index for three new rows
            f"SELECT urn, count(*) FROM {_ASPECT_TABLE} NOT INDEXED WHERE rowid > ? GROUP BY urn", [seen_rowid]
        )
        if self._row_identity(seen_rowid) != identity or seen_rows + sum(n for _, n in added) != count:
            return Changes(now, None)
        urns = frozenset(urn for urn, _ in added)
        listed = self._listed("urn IN (SELECT value FROM json_each(?))", [json.dumps(sorted(urns))]) if urns else []
        return Changes(now, urns, frozenset(listed))

    def _row_identity(self, rowid: int) -> str:
        """What the row with ``rowid`` is (empty when there is none): its aspect, version and write time."""
        rows = self._rows(
            f"SELECT urn, aspect_name, version, createdon FROM {_ASPECT_TABLE} WHERE rowid = ?", [rowid]
        )
        return hashlib.sha256(json.dumps(rows).encode()).hexdigest()[:16] if rows else ""

    # -- writes ----------------------------------------------------------------

    def _writable(self) -> BatchingLite:
        if self._read_only:
            raise GraphError(f"DataHub Lite graph {self._path} was opened read-only")
        if self._lite is None:
            raise GraphError(f"DataHub Lite graph {self._path} is closed")
        return self._lite

    def _storable(self, item: Emittable) -> MetadataChangeProposalWrapper | MetadataChangeEventClass:
        """The whole-aspect upsert Lite stores for an item: a PATCH merged, anything else refused."""
        if isinstance(item, MetadataChangeProposalWrapper) and item.changeType == ChangeTypeClass.PATCH:
            item = item.make_mcp()
        if isinstance(item, MetadataChangeProposalClass):
            wrapped = (
                self._merge_patch(item)
                if item.changeType == ChangeTypeClass.PATCH
                else MetadataChangeProposalWrapper.try_from_mcpc(item)
            )
            if wrapped is None:
                raise GraphError(
                    f"DataHub Lite stores whole-aspect upserts only; cannot store the "
                    f"{item.changeType} of {item.aspectName} on {item.entityUrn}"
                )
            item = wrapped
        if isinstance(item, MetadataChangeProposalWrapper) and item.changeType != ChangeTypeClass.UPSERT:
            raise GraphError(
                f"DataHub Lite stores upserts only; cannot store the {item.changeType} "
                f"of {item.aspectName} on {item.entityUrn}"
            )
        return item

    def _merge_patch(self, proposal: MetadataChangeProposalClass) -> MetadataChangeProposalWrapper:
        """The upsert GMS would store for a PATCH: the stored aspect with the patch applied."""
        urn, name = proposal.entityUrn or "", proposal.aspectName or ""
        try:
            if not urn:
                raise ValueError("the PATCH names no entityUrn")
            aspect_class = patchable_class(name)
            operations, array_primary_keys = decode_patch(proposal.aspect)
            current = self.get_aspects([urn], [aspect_class])[urn].get(name)
            merged = apply_patch(
                name,
                None if current is None else pre_json_transform(current.to_obj()),
                operations,
                array_primary_keys,
            )
        except ValueError as err:
            raise GraphError(f"cannot apply the PATCH on {urn}: {err}") from err
        return MetadataChangeProposalWrapper(
            entityUrn=urn,
            aspect=aspect_class.from_obj(post_json_transform(merged)),
            systemMetadata=proposal.systemMetadata,
        )

    def emit_mcps(self, mcps: Iterable[MetadataChangeProposalWrapper]) -> WriteReport:
        """Write in transactions of up to ``WRITE_BATCH`` proposals, storing what ``SqliteLite.write`` would.

        One commit per batch instead of one per aspect and edge is what makes
        bulk loads fast; the bound keeps other writers of the file (an ingest,
        a sensor) from waiting out SQLite's busy timeout behind one long
        transaction.  A proposal Lite cannot store is reported and the rest of
        its batch is written; a failing SQLite (a full disk, a locked file)
        rolls the batch back and reports every proposal of it.
        """
        report = WriteReport()
        for batch in batches(mcps, WRITE_BATCH):
            refused = self.write_batch(batch)
            report.failures += [
                (batch[p].entityUrn or "", batch[p].aspectName or "", reason) for p, reason in sorted(refused.items())
            ]
            report.written += len(batch) - len(refused)
        return report

    def write_batch(self, batch: Sequence[Emittable]) -> dict[int, str]:
        """One transaction of ``batch``: the position of each item not stored, with why.

        A PATCH is merged into what the same batch stored before it: the
        transaction's own writes are visible to its reads.
        """
        refused: dict[int, str] = {}  # position in the batch -> why it was not stored
        try:
            lite = self._writable()
            with lite.transaction():
                for position, mcp in enumerate(batch):
                    try:
                        self._upsert(lite, self._storable(mcp))
                    except GraphError as err:
                        refused[position] = str(err)
        except GraphError as err:
            refused = dict.fromkeys(range(len(batch)), str(err))
        except sqlite3.Error as err:
            rolled_back = f"writing to DataHub Lite graph {self._path} failed, its batch rolled back: {err}"
            refused = {position: refused.get(position, rolled_back) for position in range(len(batch))}
        self._dirty = self._dirty or len(refused) < len(batch)
        return refused

    def _upsert(self, lite: BatchingLite, item: MetadataChangeProposalWrapper | MetadataChangeEventClass) -> None:
        """:func:`upsert` each aspect of the item; a SQLite failure is left to abort the batch."""
        try:
            for writeable in mcps_from_mce(item) if isinstance(item, MetadataChangeEventClass) else [item]:
                upsert(lite, writeable)
        except sqlite3.Error:
            raise
        except Exception as err:
            raise GraphError(f"writing to DataHub Lite graph {self._path} failed: {err}") from err

    def emit(
        self,
        item: Emittable,
        callback: Callable[[Exception, str], None] | None = None,
    ) -> None:
        """DataHub's emitter contract: write one item, tell the callback, raise on failure."""
        try:
            refused = self.write_batch([item])
            if refused:
                raise GraphError(refused[0])
        except GraphError as err:
            if callback:
                callback(err, str(err))
            raise
        if callback:
            callback(None, "success")  # type: ignore[arg-type]  # the SDK's emitters do the same

    def flush(self) -> None:
        """Nothing is buffered: every write is committed when it returns."""

    def close(self) -> None:
        """Close the file, rebuilding Lite's browse index first if anything was written.

        The index is what ``datahub lite ls`` walks; the SDK rebuilds it on close,
        here in one transaction rather than a commit per edge.
        """
        lite, self._lite = self._lite, None
        if lite is None:
            return
        try:
            if self._dirty:
                lite.close_and_reindex()
            else:
                lite.sqlite_client.close()
        except sqlite3.Error as err:
            raise GraphError(f"closing DataHub Lite graph {self._path} failed: {err}") from err
