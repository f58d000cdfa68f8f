"""A column a feature reads (or derives from) no longer looks like the data the model trained on.

Schema detectors see a retype; nothing sees a unit change (amounts in cents, a
score in percent) that keeps the type.  Profiles do: ``datasetProfile``, as
DataHub's profilers or a team's own job write them.  Each profiled table's
newest profile is set against the one taken when the model version trained
(its run's creation time), else against the profile before it, on the
statistics ``recall.yaml``'s ``profile_drift`` section bounds.  A shift that
travels along lineage is reported once, at the column it starts from, listing
where it reached.  A table nobody profiles is left alone: no profile is no
evidence, not a clean bill.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from recall_dagster.detect.config import ProfileDriftConfig, ScanConfig
from recall_dagster.detect.finding import Finding, finding
from recall_dagster.detect.holds import first_after
from recall_dagster.detect.state import DetectorState
from recall_dagster.estate import ModelClosure, display_name
from recall_dagster.estate.views import ColumnProfile, Dataset, Profile
from recall_dagster.estate.columns import Col, ColumnGraph, column_name
from recall_dagster.detect.declared import Detector, Reads

NAME = "profile_drift"
CASES = ("shift",)
# Judged at the scan's instant: kept until a newer profile of the closure's data (holds; recall_dagster.kept.verdicts).
ROWS = ""  # the "column" a table's row count is kept under
TRAINED = "the profile when this version trained"
PREVIOUS = "the profile before it (no training time is recorded)"


@dataclass(frozen=True)
class Shift:
    """What moved in one column (or, under ``ROWS``, a table's row count) between two profiles."""

    urn: str  # the profiled twin
    changes: tuple[str, ...]
    earlier: dict[str, Any]
    latest: dict[str, Any]


def _show(value: float | None) -> str:
    return f"{value:,.6g}"


def _stats(c: ColumnProfile) -> dict[str, Any]:
    return {k: v for k, v in (("null_fraction", c.null_fraction), ("distinct", c.distinct), ("min", c.minimum),
                              ("max", c.maximum), ("mean", c.mean), ("stdev", c.stdev)) if v is not None}


def column_changes(then: ColumnProfile, now: ColumnProfile, pc: ProfileDriftConfig) -> tuple[str, ...]:
    """Each bounded statistic that moved past its bound, as a reader sees it; statistics either side lacks are
    not compared."""
    out = []
    if then.null_fraction is not None and now.null_fraction is not None:
        if now.null_fraction - then.null_fraction > pc.null_fraction_increase:
            out.append(f"NULLs {then.null_fraction:.1%} -> {now.null_fraction:.1%}")
    if then.distinct and now.distinct is not None:
        if abs(now.distinct - then.distinct) / then.distinct > pc.distinct_change:
            out.append(f"distinct values {then.distinct:,} -> {now.distinct:,}")
    if then.mean is not None and now.mean is not None:
        moved = abs(now.mean - then.mean)
        if then.stdev:
            if moved / then.stdev > pc.mean_shift:
                out.append(f"mean {_show(then.mean)} -> {_show(now.mean)} ({moved / then.stdev:.1f} standard deviations)")
        elif then.mean and moved / abs(then.mean) > pc.relative_mean_shift:
            out.append(f"mean {_show(then.mean)} -> {_show(now.mean)} ({moved / abs(then.mean):.0%})")
    if then.minimum is not None and then.maximum is not None and now.minimum is not None and now.maximum is not None:
        width = then.maximum - then.minimum
        beyond = max(then.minimum - now.minimum, now.maximum - then.maximum, 0.0)
        if width > 0 and beyond / width > pc.range_growth:
            out.append(f"range [{_show(then.minimum)}, {_show(then.maximum)}] -> [{_show(now.minimum)}, {_show(now.maximum)}]")
    return tuple(out)


def _rows_change(then: Profile, now: Profile, pc: ProfileDriftConfig) -> tuple[str, ...]:
    if not then.row_count or now.row_count is None:
        return ()
    if abs(now.row_count - then.row_count) / then.row_count <= pc.row_count_change:
        return ()
    return (f"rows {then.row_count:,} -> {now.row_count:,}",)


def _trained_ms(closure: ModelClosure) -> int | None:
    created = [r.created_ms for r in closure.training_runs if r.created_ms is not None]
    return min(created) if created else None


@dataclass(frozen=True)
class Drift:
    """A shift where it starts: the profiled table, what moved in each of its columns, and where it reached."""

    urn: str  # the profiled twin
    shifts: dict[str, Shift]  # column (``rows`` for the row count) -> what moved
    reached: tuple[str, ...]  # downstream columns that moved with it, by name
    features: tuple[str, ...]  # the features it feeds
    reference: str
    reference_at_ms: int
    profiled_at_ms: int

    @property
    def message(self) -> str:
        parts = ["; ".join(s.changes) if c == "rows" else f"{c}: {'; '.join(s.changes)}" for c, s in self.shifts.items()]
        text = f"{display_name(self.urn)} moved against {self.reference}: {' | '.join(parts)}"
        return text + (f"; reached {', '.join(self.reached)}" if self.reached else "")


def _pair(dataset: Dataset, at_ms: int, reference_ms: int | None, label: str) -> tuple[Profile, Profile, str] | None:
    """The profile at ``at_ms`` and the one to judge it by: at ``reference_ms``, else the one before it."""
    now = dataset.profile_at(at_ms)
    if now is None:
        return None
    if reference_ms is not None:
        then = dataset.profile_at(reference_ms)
    else:
        then, label = next((p for p in dataset.profiles if p.at_ms < now.at_ms), None), PREVIOUS
    return (then, now, label) if then is not None and then.at_ms != now.at_ms else None


def drifts(
    closure: ModelClosure, pc: ProfileDriftConfig, at_ms: int, reference_ms: int | None, label: str
) -> tuple[Drift, ...]:
    """Every shift between the profiles at ``reference_ms`` (``label`` names it; without one, each table's
    previous profile) and at ``at_ms``, in the columns ``closure``'s features read or derive from; one per origin."""
    if not any(d.profiles for d in closure.datasets.values()):
        return ()  # nobody profiles this closure: no lineage walk on the scan's path
    columns = closure.columns
    fed = columns.feeding(closure)
    fed_tables = {table for table, _ in fed}
    shifts: dict[Col, Shift] = {}
    against: dict[str, tuple[str, int, int]] = {}  # table -> (reference, its time, the newest profile's time)
    for urn, dataset in sorted(closure.datasets.items()):
        table = columns.canonical.get(urn, urn)
        if dataset.missing or table not in fed_tables or table in against:
            continue  # one profiled twin speaks for its table
        pair = _pair(dataset, at_ms, reference_ms, label)
        if pair is None:
            continue
        then, now, said = pair
        against[table] = (said, then.at_ms, now.at_ms)
        if rows := _rows_change(then, now, pc):
            shifts[(table, ROWS)] = Shift(urn, rows, {"rows": then.row_count}, {"rows": now.row_count})
        for path in sorted(set(then.columns) & set(now.columns)):
            col = (table, path)
            if col in fed and (moved := column_changes(then.columns[path], now.columns[path], pc)):
                shifts[col] = Shift(urn, moved, _stats(then.columns[path]), _stats(now.columns[path]))
    return _fold(shifts, against, columns, fed)


def _fold(
    shifts: dict[Col, Shift], against: dict[str, tuple[str, int, int]], columns: ColumnGraph,
    fed: dict[Col, tuple[str, ...]],
) -> tuple[Drift, ...]:
    """One drift per table where a shift starts; a shifted column that derives from another shifted column is
    listed under the origin it came from, not reported again."""
    origin_of = columns.starts(shifts)
    grouped: dict[str, list[Col]] = {}
    for col in sorted(shifts):
        grouped.setdefault(origin_of[col][0], []).append(col)
    out = []
    for table, cols in sorted(grouped.items()):
        starts = [c for c in cols if origin_of[c] == c]
        reference, then_ms, now_ms = against[table]
        out.append(Drift(
            urn=shifts[starts[0]].urn,
            shifts={("rows" if c[1] == ROWS else c[1]): shifts[c] for c in starts},
            reached=tuple(sorted({column_name(c) for c in cols if origin_of[c] != c})),
            features=tuple(sorted({f for c in cols for f in fed.get(c, ())})),
            reference=reference, reference_at_ms=then_ms, profiled_at_ms=now_ms,
        ))
    return tuple(out)


def detect(closure: ModelClosure, config: ScanConfig, state: DetectorState) -> list[Finding]:
    return [
        finding(
            closure, NAME, config.severity(NAME, "shift"), d.urn, d.message, cause=d.urn,
            reference=d.reference, reference_at_ms=d.reference_at_ms, profiled_at_ms=d.profiled_at_ms,
            columns={c: {"changes": list(s.changes), "then": s.earlier, "now": s.latest} for c, s in d.shifts.items()},
            reached=list(d.reached), features=list(d.features),
        )
        for d in drifts(closure, config.profile_drift, state.at_ms, _trained_ms(closure), TRAINED)
    ]


def identity(f: Finding) -> dict[str, object]:
    """Which columns moved and against which profile: fresh profiles of the same shift are the same finding."""
    return {"reference_at_ms": f.evidence.get("reference_at_ms"), "columns": sorted(f.evidence.get("columns", {})),
            "reached": f.evidence.get("reached")}


def holds(closure: ModelClosure, config: ScanConfig, state: DetectorState) -> int | None:
    """The verdict reads the instant only through which profile of each table is the newest then: it holds until
    the first profile taken after it of any of the closure's datasets."""
    at = state.at_ms
    return state.memo.judgements((NAME, "next profile", at)).least(
        closure.datasets, lambda d: first_after(at, (p.at_ms for p in d.profiles)) if d.profiles else None)


DETECTOR = Detector(NAME, detect, CASES, Reads.INSTANT, identity=identity, holds=holds)
