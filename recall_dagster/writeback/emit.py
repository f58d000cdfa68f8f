"""Emit writes through the graph port, retrying what failed with exponential backoff.

A write the server refused (HTTP 4xx: the proposal itself is wrong for this
server) is not retried: sending it again cannot help.  Anything else that
failed (an HTTP 5xx, a server that did not answer) is retried up to the
policy's attempts; what still fails is reported as pending so the caller can
keep it for the next scan.  Only the failed writes are sent again, so with a
flaky server every write still lands once.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Sequence

from recall_dagster.errors import ServiceUnreachable
from recall_dagster.graph.port import MetadataGraph, WriteReport
from recall_dagster.writeback.config import RetryPolicy
from recall_dagster.writeback.writes import Write

# How the GMS adapter words a proposal the server refused (see graph/gms.py).
_REFUSED = re.compile(r"\bHTTP 4\d\d\b")


@dataclass
class Outcome:
    landed: list[Write] = field(default_factory=list)
    refused: list[tuple[Write, str]] = field(default_factory=list)
    pending: list[tuple[Write, str]] = field(default_factory=list)  # still failing after every attempt
    unreachable: str | None = None  # the last "did not answer", when that is why writes are pending
    attempts: int = 0

    def merge(self, other: "Outcome") -> None:
        self.landed += other.landed
        self.refused += other.refused
        self.pending += other.pending
        self.unreachable = other.unreachable or self.unreachable
        self.attempts = max(self.attempts, other.attempts)


def _split(writes: Sequence[Write], report: WriteReport) -> tuple[list[Write], list[tuple[Write, str]]]:
    """Match the report's failures to writes: the n failures of an (urn, aspect) are its first n writes.

    Both adapters report failures in the order the proposals were given, so
    this is exact even when two run events of one assertion travel together.
    """
    reasons: dict[tuple[str, str], list[str]] = {}
    for urn, aspect, reason in report.failures:
        reasons.setdefault((urn, aspect), []).append(reason)
    used: Counter[tuple[str, str]] = Counter()
    landed, failed = [], []
    for write in writes:
        key = (write.urn, write.aspect_name)
        if used[key] < len(reasons.get(key, [])):
            failed.append((write, reasons[key][used[key]]))
            used[key] += 1
        else:
            landed.append(write)
    return landed, failed


def emit(
    graph: MetadataGraph,
    writes: Sequence[Write],
    policy: RetryPolicy,
    sleep: Callable[[float], None] = time.sleep,
) -> Outcome:
    """Send ``writes`` in order, retrying transient failures; never raises for a failed write.

    A refused token (``ConfigError``) still raises: no retry fixes it.
    """
    outcome = Outcome()
    todo: list[tuple[Write, str]] = [(w, "") for w in writes]
    waited = 0.0
    for attempt in range(1, policy.attempts + 1):
        if not todo:
            break
        if attempt > 1:
            wait = policy.next_wait(attempt - 1, waited)
            if wait is None:
                break  # the budget is spent: what is left stays pending, retried next run
            waited += wait
            sleep(wait)
        outcome.attempts = attempt
        batch = [w for w, _ in todo]
        try:
            report = graph.emit_mcps([w.mcp for w in batch])
        except ServiceUnreachable as err:
            outcome.unreachable = str(err)
            todo = [(w, str(err)) for w in batch]
            continue
        outcome.unreachable = None
        landed, failed = _split(batch, report)
        outcome.landed += landed
        outcome.refused += [(w, reason) for w, reason in failed if _REFUSED.search(reason)]
        todo = [(w, reason) for w, reason in failed if not _REFUSED.search(reason)]
    outcome.pending = todo
    return outcome
