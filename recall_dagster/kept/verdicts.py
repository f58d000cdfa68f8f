"""The last scan's verdicts on closures no change reached, so a rescan does not judge them again.

On an unchanged estate most of a rescan was detection: every detector run again
on closures that are the same objects as last time.  What a detector reads
decides how long its verdict holds (:func:`~recall_dagster.detect.catalogue.keepable`):
one reading the closure and the config alone finds the same again while the
closure is unchanged; one reading the stored schema baselines too, while they
are the same (their digest is kept with the verdicts); one reading the scan's
instant (staleness, profile drift) runs on every scan.  The second pass (the
blast radius, over the whole estate) holds for the same closures while the same
datasets are at risk (:class:`~recall_dagster.detect.catalogue.Spread`).

Verdicts are kept with the snapshot token of the closures they were found on
and reused only on closures taken from that very snapshot: a scan that saved
its snapshot and then failed before its verdicts leaves verdicts of older
closures, which no later scan takes.  A test holds every detector that reads
the instant or the baselines to saying so.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import pickle
from dataclasses import dataclass
from enum import Enum
from typing import Any, Mapping, Sequence

from pydantic import BaseModel

from recall_dagster.detect import Finding, ScanConfig
from recall_dagster.detect.holds import Timed
from recall_dagster.detect.catalogue import Judged, Spread, keepable
from recall_dagster.estate import Closure
from recall_dagster.kept.incremental import Rescan


@dataclass(frozen=True)
class Verdicts:
    """What the first pass found on one snapshot's closures, bar what the instant decides."""

    key: str  # the snapshot key: the graph, the resolve settings and the selection
    token: str  # the token of the snapshot whose closures they were found on
    config: str  # digest of the config they were found under
    baselines: str  # digest of the schema baselines they hold under
    found: Mapping[str, tuple[Finding, ...]]  # model URN -> what the kept detectors found in its closure
    # model URN -> what each detector reading the instant found in its closure, and until when it holds
    timed: Mapping[str, Mapping[str, Timed]] = dataclasses.field(default_factory=dict)


@dataclass(frozen=True)
class KeptSpread:
    """The second pass over one snapshot's closures."""

    key: str
    token: str
    config: str
    spread: Spread


def config_digest(config: ScanConfig) -> str:
    """The same in every process for the same settings (sets are sorted, not hashed in their random order),
    wherever they were read from: the file's name only ever reaches error messages."""
    plain = _plain(dataclasses.replace(config, source=""))
    return hashlib.sha256(json.dumps(plain, sort_keys=True).encode()).hexdigest()


def baselines_digest(baselines: Mapping[str, Mapping[str, str]]) -> str:
    """Equal for baselines loaded alike from one store, so a rescan can tell they are unchanged.  A pickle, not
    sorted JSON, for speed (a third of the time at 18,000 tables): equal bytes are equal baselines, and equal
    baselines in another order only cost one more judgement of schema drift."""
    return hashlib.sha256(pickle.dumps(baselines, protocol=pickle.HIGHEST_PROTOCOL)).hexdigest()


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, BaseModel):
        return {name: _plain(getattr(value, name)) for name in type(value).model_fields}
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        return sorted(_plain(v) for v in value)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _same_closures(earlier: Verdicts | KeptSpread, rescan: Rescan, config: str) -> bool:
    """Whether ``earlier`` was judged under ``config`` on the very snapshot ``rescan`` kept its closures from."""
    return bool(rescan.kept_from) and (earlier.key, earlier.token, earlier.config) == (
        rescan.snapshot, rescan.kept_from, config)


def reusable(earlier: Verdicts | None, rescan: Rescan, config: str, baselines: str) -> Judged | None:
    """The verdicts on the models whose closures were kept, when they were found on those very closures under
    the same config; None otherwise (every closure is judged)."""
    if earlier is None or not _same_closures(earlier, rescan, config):
        return None
    found = {urn: earlier.found[urn] for urn in rescan.kept if urn in earlier.found}
    timed = {urn: earlier.timed[urn] for urn in found if urn in earlier.timed}
    return Judged(found, keepable(baselines_unchanged=earlier.baselines == baselines), timed)


def reusable_spread(
    earlier: KeptSpread | None, rescan: Rescan, config: str, closures: Sequence[Closure]
) -> Spread | None:
    """The last second pass, when every closure of this scan is one it ran over (none read again, none gone)."""
    if earlier is None or not _same_closures(earlier, rescan, config):
        return None
    same = rescan.reread == 0 and len(earlier.spread.findings) == len(closures) and all(
        c.urn in earlier.spread.findings for c in closures)
    return earlier.spread if same else None


def partly_reusable_spread(
    earlier: KeptSpread | None, rescan: Rescan, config: str
) -> tuple[Spread, frozenset[str]] | None:
    """The last second pass and the models whose closures this scan kept from the snapshot it ran over (their
    blast radius holds while the same datasets are at risk and endanger the same models: :func:`second_pass`)."""
    if earlier is None or not _same_closures(earlier, rescan, config):
        return None
    return earlier.spread, rescan.kept
