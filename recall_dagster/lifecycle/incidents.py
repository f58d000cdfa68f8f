"""The incident lifecycle as a pure transition: ledger + root causes now -> ledger', events.

An incident is raised when a root cause starts failing, updated while it
fails and something about it changed (another test fails, the failed-row
count moves, another model is hit), and resolved when none of its tests fails
any more.  A cause is matched to an open incident by shared origin columns or
tests, so an incident keeps its identity while its tests come and go; a cause
that fails again after resolution is a new incident (its URN includes when
the streak began).  Re-running with nothing new changes nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Mapping, Sequence

from datahub.emitter.mce_builder import datahub_guid
from datahub.metadata.urns import IncidentUrn

from recall_dagster.contracts import lifecycle as contracts
from recall_dagster.lifecycle.assess import RootCause
from recall_dagster.estate.columns import Col
from recall_dagster.instants import iso_instant

# incidentInfo.customType of lifecycle incidents; not under the scan write-back's "recall:" prefix,
# whose stand-down resolves every incident it owns that its own scan did not plan
INCIDENT_TYPE = "recall-lifecycle:poisoned-data"
ACTIVE, RESOLVED = "ACTIVE", "RESOLVED"
EventKind = Literal["raised", "updated", "resolved"]


@dataclass(frozen=True)
class IncidentEntry:
    """One incident as the ledger keeps it; ``snapshot`` is the root cause's JSON at the last change."""

    id: str
    urn: str
    state: str
    origins: tuple[Col, ...]
    assertions: tuple[str, ...]
    raised_at_ms: int
    updated_at_ms: int
    fingerprint: str
    snapshot: Mapping[str, Any]
    timeline: tuple[Mapping[str, Any], ...] = ()  # {"at_ms", "event", "detail"}, oldest first
    resolved_at_ms: int | None = None
    started_at_ms: int | None = None  # the first failing run, when it carries a time
    published: bool = False  # whether DataHub holds the incident as the ledger last changed it
    postmortem: Mapping[str, Any] | None = None  # {"document": urn, "files": [...]} once written

    @property
    def active(self) -> bool:
        return self.state == ACTIVE

    def contract(self) -> contracts.Incident:
        """The incident as ``recall incidents list`` names it, and as the ledger keeps it."""
        return contracts.Incident(
            id=self.id,
            urn=self.urn,
            state=self.state,
            origins=[list(o) for o in self.origins],
            assertions=list(self.assertions),
            raised_at_ms=self.raised_at_ms,
            updated_at_ms=self.updated_at_ms,
            resolved_at_ms=self.resolved_at_ms,
            started_at_ms=self.started_at_ms,
            fingerprint=self.fingerprint,
            snapshot=dict(self.snapshot),
            timeline=[dict(t) for t in self.timeline],
            published=self.published,
            postmortem=dict(self.postmortem) if self.postmortem else None,
        )

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "IncidentEntry":
        return cls(
            id=data["id"],
            urn=data["urn"],
            state=data["state"],
            origins=tuple((str(o[0]), str(o[1])) for o in data["origins"]),
            assertions=tuple(data["assertions"]),
            raised_at_ms=int(data["raised_at_ms"]),
            updated_at_ms=int(data["updated_at_ms"]),
            resolved_at_ms=data.get("resolved_at_ms"),
            started_at_ms=data.get("started_at_ms"),
            fingerprint=data["fingerprint"],
            snapshot=data["snapshot"],
            timeline=tuple(data.get("timeline", ())),
            published=bool(data.get("published")),
            postmortem=data.get("postmortem"),
        )


@dataclass(frozen=True)
class Event:
    kind: EventKind
    entry: IncidentEntry


@dataclass(frozen=True)
class Transition:
    entries: Mapping[str, IncidentEntry]  # the whole ledger after the transition
    events: tuple[Event, ...] = field(default_factory=tuple)


def fingerprint(cause: RootCause) -> str:
    """What an update is about: which tests fail, how badly, since when, and which models it hits."""
    window = cause.window
    return json.dumps(
        {
            "failing": sorted(cause.failing),
            "rows": {a: cause.failed_rows.get(a) for a in sorted(cause.failing)},
            "last_failed": window.last_failed_ms if window else None,
            "models": [(m.model, len(m.poisoned), m.severity) for m in cause.blast.models],
        },
        sort_keys=True,
    )


def incident_id(cause: RootCause, now_ms: int) -> str:
    window = cause.window
    since = window.began_by_ms if window and window.began_by_ms is not None else now_ms
    # a table-level test with no known columns has no origin: its tests tell one such cause from another
    origins: list[list[str]] | list[str] = [list(o) for o in cause.origins] or sorted(r.urn for r in cause.records)
    return datahub_guid({"recall": "lifecycle-incident", "origins": origins, "since": str(since)})


def matches(entry: IncidentEntry, cause: RootCause) -> bool:
    """Whether a root cause is the one an incident is about: a shared origin column or test."""
    return bool(set(entry.origins) & set(cause.origins) or set(entry.assertions) & {r.urn for r in cause.records})


def _note(at_ms: int, event: str, detail: str) -> dict[str, Any]:
    return {"at_ms": at_ms, "event": event, "detail": detail}


def _headline(cause: RootCause) -> str:
    tests = ", ".join(r.name for r in cause.records if r.urn in cause.failing) or "no test"
    hit = "; ".join(f"{m.name} {m.summary}" for m in cause.blast.models) or "no model"
    return f"failing: {tests}; {hit}"


def _closed(snapshot: Mapping[str, Any], cause: RootCause | None) -> Mapping[str, Any]:
    """The snapshot at resolution: the blast radius as it stood while failing, the window and verdicts as closed.

    After the heal a structural blast radius would also name versions trained
    since (and drop deployments that moved on), which is not what was hit.
    """
    if cause is None:
        return snapshot
    closed = cause.contract().as_json()
    return {**closed, "blast_radius": snapshot.get("blast_radius", closed["blast_radius"])}


def reconcile(entries: Mapping[str, IncidentEntry], causes: Sequence[RootCause], now_ms: int) -> Transition:
    """Raise, update and resolve so that exactly the active causes have an ACTIVE incident."""
    ledger = dict(entries)
    events: list[Event] = []
    claimed: set[str] = set()
    for cause in (c for c in causes if c.active):
        entry = next((e for e in ledger.values() if e.active and e.id not in claimed and matches(e, cause)), None)
        mark = fingerprint(cause)
        members = tuple(dict.fromkeys([*(entry.assertions if entry else ()), *(r.urn for r in cause.records)]))
        if entry is None:
            ident = incident_id(cause, now_ms)
            entry = IncidentEntry(
                id=ident,
                urn=IncidentUrn(ident).urn(),
                state=ACTIVE,
                origins=cause.origins,
                assertions=members,
                raised_at_ms=now_ms,
                updated_at_ms=now_ms,
                fingerprint=mark,
                snapshot=cause.contract().as_json(),
                timeline=(_note(now_ms, "raised", _headline(cause)),),
                started_at_ms=cause.window.began_by_ms if cause.window else None,
            )
            events.append(Event("raised", entry))
        elif entry.fingerprint != mark:
            entry = replace(
                entry,
                origins=tuple(sorted({*entry.origins, *cause.origins})),
                assertions=members,
                updated_at_ms=now_ms,
                fingerprint=mark,
                snapshot=cause.contract().as_json(),
                timeline=(*entry.timeline, _note(now_ms, "updated", _headline(cause))),
                published=False,
            )
            events.append(Event("updated", entry))
        claimed.add(entry.id)
        ledger[entry.id] = entry
    for entry in [e for e in ledger.values() if e.active and e.id not in claimed]:
        gone = next((c for c in causes if matches(entry, c)), None)
        window = gone.window if gone else None
        healed = (
            f"its tests pass again since {iso_instant(window.ended_by_ms)}"
            if window and window.ended_by_ms is not None
            else "none of its tests fails any more"
        )
        resolved = replace(
            entry,
            state=RESOLVED,
            resolved_at_ms=now_ms,
            updated_at_ms=now_ms,
            snapshot=_closed(entry.snapshot, gone),
            timeline=(*entry.timeline, _note(now_ms, "resolved", healed)),
            published=False,
        )
        ledger[entry.id] = resolved
        events.append(Event("resolved", resolved))
    return Transition(entries=ledger, events=tuple(events))
