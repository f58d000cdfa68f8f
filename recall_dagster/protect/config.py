"""The ``protect:`` section of ``recall.yaml``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from recall_dagster.detect.config import _Section
from recall_dagster.errors import ConfigError

COMPONENTS = ("tests", "freshness", "owner", "documentation", "incidents")


@dataclass(frozen=True)
class ProtectConfig:
    weights: Mapping[str, float]  # component -> points; they add up to 100
    incident_memory: int
    suggested_tests: tuple[str, ...]
    top: int


def parse_protect_config(data: Mapping[str, Any], source: str = "recall.yaml") -> ProtectConfig:
    root = _Section(data, "protect", source)
    weights = root.section("weights")
    values = {c: weights.number(c) for c in COMPONENTS}
    if abs(sum(values.values()) - 100) > 1e-9:
        raise ConfigError(f"{source}: protect.weights must add up to 100, not {sum(values.values()):g}")
    return ProtectConfig(
        weights=values,
        incident_memory=root.integer("incident_memory", minimum=1),
        suggested_tests=root.texts("suggested_tests"),
        top=root.integer("top", minimum=1),
    )
