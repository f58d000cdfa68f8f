"""An estate cut into shards that separate runs can scan at once, and that add up to the whole.

A model version goes to the shard its registered model hashes to, so the
versions of one registered model are scanned, and reported, together (which
of them are in production is decided before the cut, from every model).  The
hash is of the URN's text, so the same model lands in the same shard on every
machine and every run.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from recall_dagster.errors import ConfigError
from recall_dagster.estate.views import Model


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count`` (counting from 0)."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if not 0 <= self.index < self.count:
            raise ConfigError(f"shard {self.index} of {self.count} does not exist: shards count 0 to {self.count - 1}")

    def holds(self, model: Model) -> bool:
        digest = hashlib.sha256(model.registered.encode()).digest()
        return int.from_bytes(digest[:8], "big") % self.count == self.index

    @property
    def key(self) -> str:
        """Its name as a Dagster partition key: ``2-of-4``."""
        return f"{self.index}-of-{self.count}"

    @classmethod
    def parse(cls, key: str) -> "Shard":
        index, sep, count = key.partition("-of-")
        if not (sep and index.isdigit() and count.isdigit()):
            raise ConfigError(f"{key!r} names no shard: write INDEX-of-COUNT, as 2-of-4")
        return cls(int(index), int(count))

    @classmethod
    def all(cls, count: int) -> list["Shard"]:
        if count < 1:
            raise ConfigError(f"an estate is cut into one shard or more, not {count}")
        return [cls(i, count) for i in range(count)]
