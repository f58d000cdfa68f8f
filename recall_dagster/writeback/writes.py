"""One write Recall wants to make, with the write path it belongs to and why.

A write is always a whole-aspect UPSERT (an MCP), so re-sending it is harmless;
its ``key`` says what a later write of the same thing replaces.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Literal, cast

from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata.schema_classes import _Aspect

WritePath = Literal["assertion", "property", "tag", "incident", "document"]
PATHS: tuple[WritePath, ...] = ("property", "tag", "assertion", "incident", "document")


@dataclass(frozen=True)
class Write:
    path: WritePath
    mcp: MetadataChangeProposalWrapper
    why: str  # one line a person reading the evidence understands

    @classmethod
    def of(cls, path: WritePath, urn: str, aspect: _Aspect, why: str) -> "Write":
        """A whole-aspect upsert of ``aspect`` on ``urn``."""
        return cls(path, MetadataChangeProposalWrapper(entityUrn=urn, aspect=aspect), why)

    @property
    def urn(self) -> str:
        return self.mcp.entityUrn or ""

    @property
    def aspect_name(self) -> str:
        return self.mcp.aspectName or ""

    @property
    def is_event(self) -> bool:
        """Timeseries events add history; every other aspect replaces the last value."""
        return self.mcp.aspect is not None and self.mcp.aspect.get_aspect_type() == "timeseries"

    @property
    def key(self) -> tuple[str, ...]:
        if self.is_event:
            return (self.urn, self.aspect_name, str(getattr(self.mcp.aspect, "timestampMillis", "")))
        return (self.urn, self.aspect_name)

    @property
    def evaluation(self) -> str:
        """What an event records, apart from when and by which run it was written: two writes of one scan's
        evaluation share it, so the second can be left out."""
        event = cast(_Aspect, self.mcp.aspect)  # asked of events alone (is_event), which carry their aspect
        record = {k: v for k, v in event.to_obj().items() if k not in ("timestampMillis", "runId")}
        return hashlib.sha256(json.dumps([self.urn, self.aspect_name, record], sort_keys=True).encode()).hexdigest()

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "why": self.why, "mcp": self.mcp.to_obj(simplified_structure=True)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Write":
        # to_json wrote a wrapper of one of DataHub's own aspect classes, which from_obj reads back as one
        return cls(data["path"], cast(MetadataChangeProposalWrapper, MetadataChangeProposalWrapper.from_obj(data["mcp"])),
                   data["why"])
