"""What detectors may know beyond one closure: history and the rest of the estate.

Detectors stay pure functions of ``(closure, config, state)``.  The instant they
judge at, and everything that needs memory (schema baselines from earlier scans) or a view across models
(which production models a dataset endangers) is computed outside and handed
in here, read-only.  ``memo`` is the one mutable part: a cache of per-dataset
work, alive for one pass (:mod:`recall_dagster.detect.memo`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Mapping

from recall_dagster.detect.memo import Memo

if TYPE_CHECKING:
    from recall_dagster.estate.columns import ColumnGraph

SchemaBaseline = Mapping[str, str]  # simple field path -> type


@dataclass(frozen=True)
class Exposure:
    """The production models and live deployments that depend on one dataset."""

    models: tuple[str, ...] = ()
    deployments: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class DetectorState:
    # the instant the pass judges at (the scan's; ``--as-of`` replays the past): a closure holds none, so the
    # same closure kept from the last scan is judged now
    at_ms: int
    # dataset URN -> its schema as first recorded (see scan.py's state store)
    schema_baselines: Mapping[str, SchemaBaseline] = field(default_factory=dict)
    # dataset URN at risk -> who depends on it, over every scanned closure
    exposure: Mapping[str, Exposure] = field(default_factory=dict)
    # dataset URN -> detectors that put it at risk in this scan (filled between passes)
    at_risk: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    memo: Memo = field(default_factory=Memo, compare=False, repr=False)
    # the column lineage of every closure of the pass, built on first use (whether a failing test reaches a
    # model is asked of it, as the lifecycle asks the estate's); None: each closure's own
    columns: "Callable[[], ColumnGraph] | None" = field(default=None, compare=False, repr=False)
