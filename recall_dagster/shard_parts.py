"""Each shard's part of a scan on disk, until the run that merges the shards reads them all.

Shards run apart (Dagster runs of one partition each, on as many machines as
the run launcher gives), so their parts meet in ``RECALL_HOME``, which every
run of a deployment shares, as the schema baselines and closure snapshots do.
Beside each pickled part a small JSON file tells when it was scanned, so a
sensor can see that every shard of one instant is in without loading any.
Each shard writes its own two files under its own lock: shards never wait on
one another, and two runs of one shard never leave one's part beside the
other's instant.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from recall_dagster import detect, estate, kept, scan, severity
from recall_dagster.errors import ConfigError
from recall_dagster.estate.shards import Shard
from recall_dagster.files import RECORD_LOCK_SECONDS, locked, read_json_object, write_atomically, write_json
from recall_dagster.pickles import Signer, fingerprint, stamped, unstamped
from recall_dagster.scan import ShardScan

SOURCES = (estate, detect, severity, kept, scan)  # what defines a shard's part (ShardScan): its change refuses old parts
_STAMP = fingerprint(*SOURCES)


class ShardParts:
    """The latest part of every shard of one graph and selection, under ``<state>/shards``."""

    def __init__(self, state_dir: str | os.PathLike[str], graph: str, include_all: bool = False) -> None:
        selection = hashlib.sha256(f"{graph}\n{include_all}".encode()).hexdigest()[:20]
        self.folder = Path(state_dir) / "shards" / selection
        self.signer = Signer(state_dir)

    def save(self, part: ShardScan) -> None:
        """The part first, then its instant: an instant on disk always has its part beside it."""
        if part.shard is None:
            raise ConfigError("only a shard's part waits to be merged; a scan of the whole estate needs no merge")
        key = part.shard.key
        with locked(self.folder / f".{key}.lock", f"shard {key}'s part", RECORD_LOCK_SECONDS):
            write_atomically(self.folder / f"{key}.pickle", stamped(part, _STAMP, self.signer), "shard part")
            write_json(self.folder / f"{key}.json", {"scanned_at_ms": part.scanned_at_ms,
                                                     "models": len(part.closures)}, "shard part")

    def instants(self, count: int) -> dict[str, int | None]:
        """When each of ``count`` shards was last scanned (None: never)."""
        found: dict[str, int | None] = {}
        for shard in Shard.all(count):
            entry = read_json_object(self.folder / f"{shard.key}.json", "shard part")
            at = entry.get("scanned_at_ms")
            found[shard.key] = at if isinstance(at, int) else None
        return found

    def load(self, count: int) -> list[ShardScan]:
        """The latest part of each of ``count`` shards; a missing or unreadable one is named."""
        parts, unreadable = [], []
        for shard in Shard.all(count):
            path = self.folder / f"{shard.key}.pickle"
            try:
                part = unstamped(path.read_bytes(), _STAMP, self.signer, f"shard part {path}")
            except FileNotFoundError:
                part = None
            if isinstance(part, ShardScan) and part.shard == shard:
                parts.append(part)
            else:
                unreadable.append(shard.key)
        if unreadable:
            raise ConfigError(
                f"no readable part of shard {', '.join(unreadable)} in {self.folder}: scan every shard (a backfill "
                "of all partitions of shard_scans) before merging"
            )
        return parts
