"""From assertion histories to root causes: one per set of origin columns, judged end to end.

Two tests failing on one bad load (``fct_orders.unit_price`` and
``fct_transactions.unit_price`` both NULL because ``raw.orders.unit_price``
is) are one problem: failing assertions whose origin columns meet are grouped
into one root cause, which carries its blast radius, its blind windows, and the
verdict on every registered version of every model it reaches.  Incidents,
the ``blind-window`` command and the retrain gate all read the same result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from recall_dagster.contracts import lifecycle as contracts
from recall_dagster.estate import display_name
from recall_dagster.estate.reach import origins_of
from recall_dagster.lifecycle.blast import BlastRadius, blast_radius
from recall_dagster.estate.columns import Col, column_name
from recall_dagster.lifecycle.config import LifecycleConfig
from recall_dagster.lifecycle.override import GateOverride
from recall_dagster.lifecycle.records import AssertionRecord, Estate, TrainingSpan
from recall_dagster.lifecycle.trained_by import DagsterRun
from recall_dagster.lifecycle.verdict import VersionVerdict, judge, newest_first, rollback_target
from recall_dagster.lifecycle.window import BlindWindow, blind_windows, hull


@dataclass(frozen=True)
class ModelVersions:
    """Every registered version of one affected model, newest first, and where to roll back to."""

    group: str
    versions: tuple[VersionVerdict, ...]
    rollback: VersionVerdict | None

    @property
    def name(self) -> str:
        return display_name(self.group)

    @property
    def rollback_note(self) -> str:
        if self.rollback is None:
            return "no version is provably clean: there is no rollback target; retrain once the data is healthy"
        if self.rollback is self.versions[0]:
            return f"the newest version, {self.rollback.name}, is clean: nothing to roll back"
        return f"roll back to {self.rollback.name}: the newest version trained outside every blind window"

    def contract(self) -> contracts.ModelVersions:
        return contracts.ModelVersions(
            group=self.group,
            name=self.name,
            rollback=self.rollback.contract() if self.rollback else None,
            rollback_note=self.rollback_note,
            versions=[v.contract() for v in self.versions],
        )


@dataclass(frozen=True)
class RootCause:
    origins: tuple[Col, ...]
    records: tuple[AssertionRecord, ...]  # every assertion of this cause with a failing run in its history
    failing: tuple[str, ...]  # URNs of those failing now
    windows: Mapping[str, tuple[BlindWindow, ...]]  # assertion URN -> its failing streaks, oldest first
    failed_rows: Mapping[str, int | None]  # assertion URN -> rows failing on its newest failing run
    measured: Mapping[str, str | None]  # assertion URN -> what that run measured, when not failing rows
    blast: BlastRadius
    models: tuple[ModelVersions, ...]

    @property
    def active(self) -> bool:
        return bool(self.failing)

    @property
    def latest_windows(self) -> tuple[BlindWindow, ...]:
        """Each assertion's latest streak: the current (or last) incident, without older ones."""
        return tuple(w[-1] for w in self.windows.values() if w)

    @property
    def window(self) -> BlindWindow | None:
        """The latest streak of every assertion, held in one window."""
        return hull(self.latest_windows)

    def versions_of(self, model_urn: str) -> VersionVerdict | None:
        return next((v for m in self.models for v in m.versions if v.model == model_urn), None)

    def contract(self) -> contracts.Cause:
        """The cause as the blind window names it, and as an incident keeps it (its snapshot)."""
        window = self.window
        return contracts.Cause(
            origins=[column_name(c) for c in self.origins],
            active=self.active,
            window=window.contract() if window else None,
            assertions=[
                contracts.AssertionHistory(
                    urn=r.urn,
                    name=r.name,
                    dataset=r.dataset,
                    on=r.where,
                    kind=r.kind,
                    failing=r.urn in self.failing,
                    failed_rows=self.failed_rows.get(r.urn),
                    measured=self.measured.get(r.urn),
                    windows=[w.contract() for w in self.windows.get(r.urn, ())],
                )
                for r in self.records
            ],
            blast_radius=self.blast.contract(),
            models=[m.contract() for m in self.models],
        )


def _groups(records: Sequence[AssertionRecord], origins: Mapping[str, tuple[Col, ...]]) -> list[list[AssertionRecord]]:
    """Records whose origins meet, transitively, in first-seen order."""
    groups: list[tuple[set[Col], list[AssertionRecord]]] = []
    for record in records:
        mine = set(origins[record.urn]) or {(record.dataset, record.urn)}  # no lineage at all: a cause of its own
        meeting = [g for g in groups if g[0] & mine]
        merged_cols, merged = set(mine), [record]
        for g in meeting:
            merged_cols |= g[0]
            merged = g[1] + merged
            groups.remove(g)
        groups.append((merged_cols, merged))
    return [g[1] for g in groups]


def _versions(
    estate: Estate, blast: BlastRadius, windows: Sequence[BlindWindow], spans: Mapping[str, tuple[TrainingSpan, ...]],
    dagster_url: str,
) -> tuple[ModelVersions, ...]:
    hit_groups = dict.fromkeys(m.group for m in blast.models)
    out = []
    for group in hit_groups:
        versions = []
        for closure in estate.closures:
            if closure.registered_model != group:
                continue
            impact = blast.impact_on(closure.urn)
            poisoned = impact.poisoned_inputs if impact else ()
            suspect = impact.suspect_reason if impact else None
            versions.append(
                VersionVerdict(
                    model=closure.urn,
                    name=closure.model.name,
                    version=closure.model.version,
                    verdict=judge(spans.get(closure.urn, ()), windows, poisoned, suspect),
                    spans=spans.get(closure.urn, ()),
                    live_deployments=tuple(d.urn for d in closure.live_deployments),
                    production=closure.model.registry_production,
                    poisoned_inputs=poisoned,
                    gate_override=GateOverride.from_version(closure.model.properties),
                    trained_by=DagsterRun.of(closure.model.properties, dagster_url),
                )
            )
        ordered = newest_first(versions)
        out.append(ModelVersions(group=group, versions=ordered, rollback=rollback_target(ordered)))
    return tuple(out)


def root_causes(
    records: Sequence[AssertionRecord],
    estate: Estate,
    spans: Mapping[str, tuple[TrainingSpan, ...]],
    config: LifecycleConfig,
) -> tuple[RootCause, ...]:
    """Every root cause with a failing run in the given histories; active ones first."""
    windows = {r.urn: blind_windows(r.runs, config.failing, r.writes_ms, r.last_change_ms) for r in records}
    failed = [r for r in records if windows[r.urn]]
    origins = {r.urn: origins_of(r.dataset, r.column, estate.columns, config.reach) for r in failed}
    passing = frozenset(
        estate.columns.col((r.dataset, r.column)) for r in records
        if r.column and r.latest is not None and r.latest.result == "SUCCESS"
    )
    causes = []
    for group in _groups(failed, origins):
        blast = blast_radius(group, estate.closures, estate.columns, config, passing)
        newest = {r.urn: r.newest_failure(config.failing) for r in group}
        all_windows = [w for r in group for w in windows[r.urn]]
        causes.append(
            RootCause(
                origins=tuple(sorted({o for r in group for o in origins[r.urn]})),
                records=tuple(group),
                failing=tuple(r.urn for r in group if r.latest is not None and config.failing(r.latest.result)),
                windows={r.urn: windows[r.urn] for r in group},
                failed_rows={u: run.failed_rows if run else None for u, run in newest.items()},
                measured={u: run.measured if run else None for u, run in newest.items()},
                blast=blast,
                models=_versions(estate, blast, all_windows, spans, config.dagster_url),
            )
        )
    return tuple(sorted(causes, key=lambda c: (not c.active, [column_name(o) for o in c.origins])))
