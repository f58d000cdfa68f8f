"""The ``protect:`` section of ``recall.yaml``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

COMPONENTS = ("tests", "freshness", "owner", "documentation", "incidents")


@dataclass(frozen=True)
class ProtectConfig:
    weights: Mapping[str, float]  # component -> points; they add up to 100
    incident_memory: int
    suggested_tests: tuple[str, ...]
    top: int
