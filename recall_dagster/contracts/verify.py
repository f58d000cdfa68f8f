"""``recall verify --json``: every write path tried against a scratch model, and what the graph can do."""

from __future__ import annotations

from typing import Literal

from recall_dagster.contracts.base import Contract, Part


Phase = Literal["raise", "stand down"]  # the finding appears; the model heals


class WritePath(Part):
    path: str
    phase: Phase
    ok: bool
    detail: str


class Verification(Contract):
    graph: str
    ok: bool
    checks: list[WritePath]
    capabilities: dict[str, bool]
    removed: list[str]  # soft-deleted
    left: list[str]  # what could not be removed
    hard_delete: list[str]  # the commands that remove the scratch entities for good
