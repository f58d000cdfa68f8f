"""The last scan's verdicts on closures no change reached, so a rescan does not judge them again.

On an unchanged estate most of a rescan was detection: every detector run again
on closures that are the same objects as last time.  A detector whose verdict
is a function of the closure and the config alone (its module does not say
``VOLATILE``) finds the same again, so its findings are kept per model with the
digest of the config they were found under, and reused for the models whose
closures the rescan took from its snapshot (:attr:`Rescan.kept`).  The volatile
ones, which read the scan's instant (staleness, profile drift) or the stored
schema baselines (schema drift), run on every scan, as does the blast radius,
which reads the whole estate.  A test holds every detector that reads the
instant or the baselines to saying so.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from enum import Enum
from typing import Any, Mapping

from recall_dagster.detect import Finding, RecallConfig


@dataclass(frozen=True)
class Verdicts:
    key: str  # the snapshot key: the graph, the resolve settings and the selection
    config: str  # digest of the config the findings were found under
    found: Mapping[str, tuple[Finding, ...]]  # model URN -> what the steady detectors found in its closure


def config_digest(config: RecallConfig) -> str:
    """The same in every process for the same settings (sets are sorted, not hashed in their random order)."""
    return hashlib.sha256(json.dumps(_plain(config), sort_keys=True).encode()).hexdigest()


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        return sorted(_plain(v) for v in value)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def reusable(earlier: Verdicts | None, key: str, config: str, kept: frozenset[str]) -> dict[str, tuple[Finding, ...]]:
    """The verdicts on the models whose closures were kept, when they were found on the same selection under
    the same config; none otherwise."""
    if earlier is None or earlier.key != key or earlier.config != config:
        return {}
    return {urn: earlier.found[urn] for urn in kept if urn in earlier.found}
