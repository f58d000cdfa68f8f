"""Acknowledgements: "we know, and we accept it until Friday", for one finding and the evidence it had.

An acknowledgement names a detector, the finding's subject and (optionally) a
registered model, and carries the fingerprints of the evidence it accepted.
It covers a finding while that finding's evidence still has one of those
fingerprints and the scan's instant lies between the acknowledgement's
creation and its expiry.  Evidence that changes (another column dropped, a
new failing streak, a table that refreshed and stopped again) makes a new
finding nobody accepted.  What identifies a finding's evidence is each
detector's ``identity`` (everything but the path and the measurement, unless
the detector says which keys are stable).  Pure: time is the scan's instant.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from datahub.emitter.mce_builder import datahub_guid

from recall_dagster.contracts import scan as contract
from recall_dagster.detect.finding import Finding
from recall_dagster.detect.catalogue import IDENTITIES, OpenFindings
from recall_dagster.estate import Closure
from recall_dagster.estate.naming import model_name
from recall_dagster.instants import in_calendar, iso_instant

VOLATILE = ("path", "measured")  # evidence that changes without the problem changing


def _everything_stable(f: Finding) -> Any:
    return {k: v for k, v in f.evidence.items() if k not in VOLATILE}


def fingerprint(f: Finding) -> str:
    """A short, stable digest of what the finding's evidence says, as its detector identifies it."""
    identity = IDENTITIES.get(f.detector, _everything_stable)(f)
    return datahub_guid({"detector": f.detector, "identity": json.dumps(identity, sort_keys=True, default=str)})[:16]


@dataclass(frozen=True)
class Acknowledgement:
    """Who accepted a finding, why, and until when (epoch millis)."""

    id: str
    detector: str
    subject: str
    model: str | None  # a registered model name (every version, later retrains too), NAME/VERSION; None: any model
    fingerprints: tuple[str, ...]
    reason: str
    by: str
    created_ms: int
    until_ms: int

    @staticmethod
    def make(detector: str, subject: str, model: str | None, fingerprints: Iterable[str], reason: str, by: str,
             created_ms: int, until_ms: int) -> "Acknowledgement":
        prints = tuple(sorted(set(fingerprints)))
        ident = datahub_guid({"detector": detector, "subject": subject, "model": model or "", "prints": ",".join(prints)})
        return Acknowledgement(ident[:12], detector, subject, model, prints, reason, by, created_ms, until_ms)

    def covers(self, f: Finding, closure: Closure, at_ms: int) -> bool:
        return (
            self.detector == f.detector and self._on(f, closure) and self._for(closure)
            and self.created_ms <= at_ms < self.until_ms
            and fingerprint(f) in self.fingerprints
        )

    def _on(self, f: Finding, closure: Closure) -> bool:
        """The finding's subject; a finding on a version itself is on its registered model when that is the
        subject acknowledged, so the acknowledgement holds for the versions later retrains register."""
        return self.subject == f.subject or (f.subject == closure.urn and self.subject == closure.registered_model)

    def _for(self, closure: Closure) -> bool:
        if self.model is None:
            return True
        return model_name(self.model).names_model(closure)

    def to_json(self) -> dict[str, Any]:
        """The record as stored, signed and published, and as ``recall ack`` answers it. Built apart from the
        answer's contract on purpose: Recall's signature covers these keys, so a field the answer gains must not
        reach the record, or every acknowledgement signed before would stop verifying."""
        return {
            "id": self.id, "detector": self.detector, "subject": self.subject, "model": self.model,
            "fingerprints": list(self.fingerprints), "reason": self.reason, "by": self.by,
            "created_ms": self.created_ms, "until_ms": self.until_ms,
        }

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> "Acknowledgement":
        """One acknowledgement as stored; a malformed one raises ``ValueError`` naming what is wrong."""
        try:
            ack = Acknowledgement(
                id=str(data["id"]), detector=str(data["detector"]), subject=str(data["subject"]),
                model=str(data["model"]) if data.get("model") else None,
                fingerprints=tuple(str(p) for p in data["fingerprints"]), reason=str(data["reason"]),
                by=str(data["by"]), created_ms=int(data["created_ms"]), until_ms=int(data["until_ms"]),
            )
        except (KeyError, TypeError, ValueError, OverflowError) as err:
            raise ValueError(f"an acknowledgement lacks or mangles {err}") from None
        for name, ms in (("created_ms", ack.created_ms), ("until_ms", ack.until_ms)):
            if not in_calendar(ms):
                raise ValueError(f"acknowledgement {ack.id}'s {name} {ms} lies outside the calendar")
        return ack


@dataclass(frozen=True)
class Accepted:
    """What a finding shows when an acknowledgement covers it."""

    id: str
    by: str
    reason: str
    until_ms: int

    def contract(self) -> contract.Acknowledged:
        return contract.Acknowledged(id=self.id, by=self.by, reason=self.reason, until=iso_instant(self.until_ms))


@dataclass(frozen=True)
class Split:
    """A model's findings parted into those still open and those an acknowledgement covers."""

    open: tuple[Finding, ...] = ()
    accepted: tuple[tuple[Finding, Accepted], ...] = ()


def split(closure: Closure, findings: Sequence[Finding], acks: Sequence[Acknowledgement], at_ms: int) -> Split:
    """Each finding either open or covered by the first acknowledgement (by id) that accepts it."""
    if not acks:
        return Split(tuple(findings))  # every scan scores every model: most estates acknowledge nothing
    ordered = sorted(acks, key=lambda a: a.id)
    open_, accepted = [], []
    for f in findings:
        ack = next((a for a in ordered if a.covers(f, closure, at_ms)), None)
        if ack is None:
            open_.append(f)
        else:
            accepted.append((f, Accepted(ack.id, ack.by, ack.reason, ack.until_ms)))
    return Split(tuple(open_), tuple(accepted))


def still_open(acks: Sequence[Acknowledgement], at_ms: int) -> OpenFindings | None:
    """What the blast radius spreads: the findings no acknowledgement in force at ``at_ms`` covers (an
    accepted risk endangers no one); None when nothing is acknowledged."""
    return (lambda c, fs: split(c, fs, acks, at_ms).open) if acks else None


def merged(*sources: Iterable[Acknowledgement]) -> tuple[Acknowledgement, ...]:
    """Every acknowledgement once, by id, the first source's copy winning."""
    seen: dict[str, Acknowledgement] = {}
    for source in sources:
        for ack in source:
            seen.setdefault(ack.id, ack)
    return tuple(seen[k] for k in sorted(seen))
