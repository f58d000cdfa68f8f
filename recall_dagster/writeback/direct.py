"""Writes outside a scan's write-back (impact verdicts, diagnoses, governance packs): only what the graph lacks.

The scan's write-back plans a whole estate; these records are a handful of
aspects each.  They share its rules all the same: read what the writes
replace, build them against it, send only what differs (so repeating a run
writes nothing), and report what did not land instead of raising.
"""

from __future__ import annotations

import time
from typing import Callable, Sequence

from datahub.metadata.schema_classes import _Aspect

from recall_dagster.errors import GraphError, ServiceUnreachable
from recall_dagster.graph.port import MetadataGraph
from recall_dagster.writeback.config import RetryPolicy
from recall_dagster.writeback.emit import emit
from recall_dagster.writeback.plan import changed
from recall_dagster.writeback.state import GraphState
from recall_dagster.writeback.writes import Write


def write_changed(
    graph: MetadataGraph,
    read: Sequence[str],
    aspects: Sequence[type[_Aspect]],
    build: Callable[[GraphState], list[Write]],
    policy: RetryPolicy,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[int, list[str]]:
    """Writes landed, and one line per write (or the read) that did not."""
    try:
        state = GraphState.of(graph.get_aspects(list(read), list(aspects)))
    except (ServiceUnreachable, GraphError) as err:
        return 0, [f"reading {graph.location} to plan the write: {err}"]
    writes = [w for w in build(state) if changed(w, state)]
    outcome = emit(graph, writes, policy, sleep)
    return len(outcome.landed), [f"{w.aspect_name} on {w.urn}: {why}" for w, why in (*outcome.refused, *outcome.pending)]
