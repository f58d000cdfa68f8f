"""Many proposals into a DataHub Lite file, one SQLite transaction per batch.

The SDK's :meth:`SqliteLite.write` commits every aspect, and every browse-index
edge, on its own, and a commit waits on the disk: 3,820 aspects took 7.9 s to
write and 3.7 s to close (the browse index rebuilt edge by edge), against 1.1 s
and 1.0 s in batches.  :func:`upsert` stores exactly the rows ``SqliteLite.write``
stores for a proposal (the same versions, system metadata, ``createdon`` and
browse edges, by the same rules, line for line) but leaves the commit to the
caller, and serializes the aspect once where the SDK does it three times, through the compiled encoder
(:mod:`recall_dagster.graph.encode`).
A test writes the same proposals both ways and compares the tables.
"""

from __future__ import annotations

import json
import time
from contextlib import contextmanager
from itertools import groupby
from operator import itemgetter
from typing import Iterator

from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.emitter.serialization_helper import pre_json_transform
from datahub.lite.sqlite_lite import SqliteLite
from datahub.metadata.schema_classes import (
    ASPECT_NAME_MAP,
    ChartInfoClass,
    ContainerClass,
    ContainerPropertiesClass,
    DashboardInfoClass,
    DataPlatformInstanceClass,
    DatasetPropertiesClass,
    SubTypesClass,
    SystemMetadataClass,
    TagPropertiesClass,
)

from recall_dagster.graph.decode import aspect_from_text
from recall_dagster.graph.encode import to_obj
from recall_dagster.instants import seconds_ms

_TABLE = "metadata_aspect_v2"

# The aspects Lite's browse hooks (``post_update_hook``, ``global_post_update_hook``) read; a test holds every
# other aspect class to adding no edge.
BROWSE_ASPECTS = frozenset(
    c.ASPECT_NAME
    for c in (ChartInfoClass, ContainerClass, ContainerPropertiesClass, DashboardInfoClass, DataPlatformInstanceClass,
              DatasetPropertiesClass, SubTypesClass, TagPropertiesClass)
)


class BatchingLite(SqliteLite):
    """:class:`SqliteLite` whose commits can be held until a batch ends.

    The SDK's browse-index code (``add_edge``, ``reindex``) commits as it goes;
    holding those commits is what lets a batch, and the index rebuilt on
    close, be one transaction instead of one per edge.
    """

    _held = False  # a class attribute: the SDK commits from its constructor, before __init__ could set it

    def _commit(self) -> None:
        if not self._held:
            super()._commit()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Everything inside commits once at the end, or not at all if it raises."""
        self._held = True
        try:
            yield
        except BaseException:
            self._held = False
            self.sqlite_client.rollback()
            raise
        self._held = False
        self.sqlite_client.commit()

    def reindex(self) -> None:
        """``SqlBackedLite.reindex``, the same hooks called in the same order, decoding only the aspects the
        hooks read and through the compiled decoder: the SDK decoded every aspect of the file through its
        converter, 8.9 of a 22.8 s build of 1,000 models."""
        self._execute("DELETE FROM metadata_edge_v2")
        self._commit()
        wanted = ", ".join(f"'{name}'" for name in sorted(BROWSE_ASPECTS))
        rows = self._execute(
            f"SELECT urn, aspect_name, CASE WHEN aspect_name IN ({wanted}) THEN metadata END FROM {_TABLE} "
            "WHERE version = 0 ORDER BY urn, aspect_name"
        )
        for urn, found in groupby(rows, key=itemgetter(0)):
            aspects = {name: aspect_from_text(ASPECT_NAME_MAP[name], text) for _, name, text in found if text is not None}
            for name, aspect in aspects.items():
                self.post_update_hook(urn, name, aspect)
            self.global_post_update_hook(urn, aspects)

    def close_and_reindex(self) -> None:
        """``SqliteLite.close`` with the browse index rebuilt in one transaction."""
        with self.transaction():
            self.reindex()
        self._close_connection()


def upsert(lite: BatchingLite, writeable: MetadataChangeProposalWrapper) -> None:
    """Store one UPSERT the way ``SqlBackedLite.write`` does, without committing.

    The same quirks are kept on purpose, since the SDK's own readers and the
    next ``SqliteLite.write`` rely on them: version 0 mirrors the latest
    version but keeps its first ``createdon``; an aspect equal to the stored
    one (compared as parsed JSON) only refreshes ``lastObserved``; the
    caller's proposal gets the system metadata the SDK fills in.
    """
    urn, name, aspect = writeable.entityUrn, writeable.aspectName, writeable.aspect
    if not (urn and name and aspect):
        raise ValueError("DataHub Lite stores a proposal with an entityUrn and an aspect only")
    db = lite.sqlite_client
    metadata = json.dumps(pre_json_transform(to_obj(aspect)))
    supplied = to_obj(writeable.systemMetadata) if writeable.systemMetadata is not None else None
    max_row = db.execute(
        f"SELECT metadata, system_metadata FROM {_TABLE} WHERE urn = ? AND aspect_name = ? AND version = 0",
        [urn, name],
    ).fetchone()
    if max_row is None:
        new_version, needs_write = 1, True
    else:
        stored_system = json.loads(max_row[1])
        real_version = stored_system.get("properties", {}).get("sysVersion")
        if real_version is None:
            real_version = db.execute(
                f"SELECT max(version) FROM {_TABLE} WHERE urn = ? AND aspect_name = ?", [urn, name]
            ).fetchone()[0]
        needs_write = json.loads(metadata) != json.loads(max_row[0])
        new_version = int(real_version) + 1

    created_on = seconds_ms(time.time())
    if writeable.systemMetadata is not None and writeable.systemMetadata.lastObserved:
        created_on = writeable.systemMetadata.lastObserved
    if writeable.systemMetadata is None:
        writeable.systemMetadata = SystemMetadataClass(lastObserved=created_on, properties={})
    elif writeable.systemMetadata.lastObserved is None:
        writeable.systemMetadata.lastObserved = created_on

    if not needs_write:
        stored_system = stored_system or {}
        stored_system["lastObserved"] = writeable.systemMetadata.lastObserved
        db.execute(
            f"UPDATE {_TABLE} SET system_metadata = ? WHERE urn = ? AND aspect_name = ? AND version = 0",
            [json.dumps(stored_system), urn, name],
        )
        return
    system = supplied if supplied is not None else to_obj(writeable.systemMetadata)
    system.setdefault("properties", {})["sysVersion"] = str(new_version)
    system_text = json.dumps(system)
    db.execute(f"INSERT INTO {_TABLE} VALUES (?, ?, ?, ?, ?, ?)", [urn, name, new_version, metadata, system_text, created_on])
    if max_row is None:
        db.execute(f"INSERT INTO {_TABLE} VALUES (?, ?, 0, ?, ?, ?)", [urn, name, metadata, system_text, created_on])
    else:
        db.execute(
            f"UPDATE {_TABLE} SET metadata = ?, system_metadata = ? WHERE urn = ? AND aspect_name = ? AND version = 0",
            [metadata, system_text, urn, name],
        )
    lite.post_update_hook(urn, name, aspect)
