"""Every detector, in contract order, and the two-pass run over an estate's closures.

Pass one runs each detector on each closure.  Pass two runs ``blast_radius``,
which needs to know what pass one found across *all* closures; it gets that
through the state, so it stays a pure ``(closure, config, state)`` function.

Either pass can take what it found before on the same closures (:class:`Judged`,
:class:`Spread`) instead of judging again: a rescan of an unchanged estate keeps
them (:mod:`recall_dagster.kept.verdicts`).  What each detector reads decides when
its verdict may be kept, as each declares (:class:`~recall_dagster.detect.declared.Reads`): the closure and
the config only (kept while the closure is unchanged), the stored schema baselines too (kept while they are
the same), or the scan's instant (judged again once its verdict may have turned).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Any, Callable, Mapping, Sequence

from recall_dagster.detect import (
    blast_radius,
    deprecated_upstream,
    failing_assertion,
    orphaned_feature,
    ownership_vacuum,
    pii_exposure,
    profile_drift,
    training_serving_skew,
    training_source_schema_drift,
    undocumented_critical_path,
    upstream_staleness,
    version_mismatch,
)
from recall_dagster.detect.config import ScanConfig
from recall_dagster.detect.declared import Detector
from recall_dagster.detect.finding import Finding
from recall_dagster.detect.holds import Timed
from recall_dagster.detect.state import DetectorState, Exposure, SchemaBaseline
from recall_dagster.errors import ConfigError
from recall_dagster.estate import Closure
from recall_dagster.estate.columns import ColumnGraph, column_graph

DETECTORS: tuple[Detector, ...] = tuple(
    m.DETECTOR
    for m in (
        training_source_schema_drift,
        orphaned_feature,
        upstream_staleness,
        ownership_vacuum,
        training_serving_skew,
        undocumented_critical_path,
        blast_radius,
        pii_exposure,
        failing_assertion,
        deprecated_upstream,
        version_mismatch,
        profile_drift,
    )
)
_ORDER = {d.name: i for i, d in enumerate(DETECTORS)}
IDENTITIES: Mapping[str, Callable[[Finding], Any]] = {d.name: d.identity for d in DETECTORS if d.identity}
_SECOND_PASS = blast_radius.NAME


def check_config(config: ScanConfig) -> None:
    """Fail before scanning when recall.yaml misses a detector, a case, or names an unknown one."""
    known = set(_ORDER)
    unknown = sorted((set(config.detectors) | set(config.blast_radius.at_risk_detectors)) - known)
    if unknown:
        raise ConfigError(f"{config.source}: unknown detector(s) {', '.join(unknown)}; known: {', '.join(_ORDER)}")
    for d in DETECTORS:
        if d.name not in config.detectors:
            raise ConfigError(f"{config.source}: `detectors.{d.name}` is missing")
        if not config.enabled(d.name):
            continue
        for case in d.cases:
            config.severity(d.name, case)


def sort_findings(findings: Sequence[Finding]) -> tuple[Finding, ...]:
    """Most serious first, then contract order, subject and message: stable across runs."""
    return tuple(sorted(findings, key=lambda f: (f.severity.rank, _ORDER.get(f.detector, 99), f.subject, f.message)))


@dataclass(frozen=True)
class Detection:
    findings: Mapping[str, tuple[Finding, ...]]  # model URN -> its findings, sorted
    blast_radius: tuple[blast_radius.BlastRadius, ...]  # estate-wide, ranked
    spread: "Spread | None" = field(default=None, repr=False, compare=False)  # what the second pass made


OpenFindings = Callable[[Closure, Sequence[Finding]], Sequence[Finding]]


Found = dict[str, list[Finding]]  # model URN -> what the first pass found


@dataclass(frozen=True)
class Judged:
    """What the first pass found before in closures that have not changed since, per model URN, and the
    detectors whose verdicts it holds (:func:`keepable`); and what the detectors reading the instant found
    there, each kept while it holds (:class:`~recall_dagster.detect.holds.Timed`)."""

    found: Mapping[str, Sequence[Finding]]
    detectors: frozenset[str]
    timed: Mapping[str, Mapping[str, Timed]] = field(default_factory=dict)  # model URN -> detector -> verdict


def keepable(baselines_unchanged: bool) -> frozenset[str]:
    """The detectors whose verdict on an unchanged closure under the same config still holds: every one that
    does not read the instant, and of those, the ones reading the schema baselines only while these are the
    same."""
    return frozenset(d.name for d in DETECTORS
                     if not d.volatile and (baselines_unchanged or not d.reads_baselines) and d.name != _SECOND_PASS)


TimedFound = dict[str, dict[str, Timed]]  # model URN -> volatile detector -> its verdict and how long it holds


@dataclass(frozen=True)
class Judgement:
    """What :func:`judge` made of a pass: what it found, the volatile verdicts with how long each holds, and how
    many of those were judged again (0: all kept as they were)."""

    found: Found
    timed: TimedFound
    judged_again: int


def first_pass(
    closures: Sequence[Closure],
    config: ScanConfig,
    schema_baselines: Mapping[str, SchemaBaseline],
    judged: Judged | None = None,
    *,
    at_ms: int,
) -> Found:
    """Every enabled detector but ``blast_radius``, judging at ``at_ms``: each needs one closure only, so shards
    of an estate can run this pass apart.  On the closures ``judged`` holds, its detectors keep their verdicts, the volatile
    ones keep theirs while they hold, and the others judge again.
    """
    return judge(closures, config, schema_baselines, judged, keep=False, at_ms=at_ms).found


def judge(
    closures: Sequence[Closure],
    config: ScanConfig,
    schema_baselines: Mapping[str, SchemaBaseline],
    judged: Judged | None = None,
    keep: bool = True,
    columns: "Callable[[], ColumnGraph] | None" = None,
    *,
    at_ms: int,
) -> Judgement:
    """:func:`first_pass`, with the volatile verdicts it made or kept and how long each holds (worked out only
    to ``keep`` them).  ``columns`` gives the estate's column lineage when a detector first asks (built from
    ``closures`` without it)."""
    enabled = [d for d in DETECTORS if config.enabled(d.name) and d.name != _SECOND_PASS]
    state = DetectorState(at_ms=at_ms, schema_baselines=schema_baselines,
                          columns=columns or cache(lambda: column_graph(closures)))
    earlier = judged.found if judged is not None else {}
    before_timed = judged.timed if judged is not None else {}
    again = [d for d in enabled if judged is None or d.name not in judged.detectors]
    timed: TimedFound = {}
    judged_again = 0

    def volatile(
        d: Detector, closure: Closure, before: Mapping[str, Timed], mine: dict[str, Timed]
    ) -> list[Finding]:
        nonlocal judged_again
        at = at_ms
        kept = before.get(d.name)
        if kept is not None and kept.holds_at(at):
            if kept.judged_at_ms == at or d.restamp is None or not kept.findings:
                mine[d.name] = kept
                return list(kept.findings)
            redrawn = d.restamp(kept.findings, kept.judged_at_ms, at)
            if redrawn is not None:
                mine[d.name] = kept
                return redrawn
        found = d.detect(closure.whole(), config, state)
        judged_again += 1
        until = d.holds(closure.whole(), config, state) if d.holds is not None and keep else at + 1
        mine[d.name] = Timed(at, until, tuple(found))
        return found

    def findings(closure: Closure) -> list[Finding]:
        kept = earlier.get(closure.urn)
        mine: dict[str, Timed] = {}
        timed[closure.urn] = mine
        if kept is None:
            return [f for d in enabled for f in (
                volatile(d, closure, {}, mine) if d.volatile else d.detect(closure.whole(), config, state))]
        before = before_timed.get(closure.urn, {})
        fresh = {d.name: volatile(d, closure, before, mine) if d.volatile else d.detect(closure.whole(), config, state)
                 for d in again}
        by_detector: dict[str, list[Finding]] = {}
        for k in kept:
            by_detector.setdefault(k.detector, []).append(k)
        return [f for d in enabled for f in (fresh[d.name] if d.name in fresh else by_detector.get(d.name) or ())]

    found = {c.urn: findings(c) for c in closures}
    return Judgement(found, timed, judged_again)


def kept_verdicts(found: Found) -> dict[str, tuple[Finding, ...]]:
    """What the detectors that do not read the instant found: the verdicts a rescan may keep."""
    keep = keepable(baselines_unchanged=True)
    return {urn: tuple(f for f in fs if f.detector in keep) for urn, fs in found.items()}


@dataclass(frozen=True)
class Spread:
    """What the second pass made of one first pass: the datasets at risk, who each endangers, each model's
    blast radius findings and the estate-wide ranking.  It holds again for the same closures under the same
    config while the same datasets are at risk; and for a closure kept unchanged among others read again,
    while none of its datasets changed standing (at risk or not, flagged by, endangering)."""

    at_risk: Mapping[str, tuple[str, ...]]
    findings: Mapping[str, tuple[Finding, ...]]  # model URN -> its blast radius findings
    ranked: tuple[blast_radius.BlastRadius, ...]
    exposure: Mapping[str, Exposure] = field(default_factory=dict)  # dataset at risk -> who depends on it


def second_pass(
    closures: Sequence[Closure], found: Found, config: ScanConfig, open_findings: OpenFindings | None = None,
    earlier: Spread | None = None, partly: "tuple[Spread, frozenset[str]] | None" = None,
    among: Sequence[Closure] | None = None, columns: "Callable[[], ColumnGraph] | None" = None, *,
    at_ms: int,
) -> Detection:
    """What needs the whole estate: ``blast_radius`` over ``closures`` and what the first pass ``found`` in
    each, and the failing tests on tables outside a model's closure that reach it (:func:`failing_assertion.outside`).
    ``earlier`` is what it made of the same closures under the same config before: kept when the same
    datasets are at risk.  ``partly`` is what it made under the same config of an estate of which the closures
    it names are unchanged here: the findings of one holding no dataset whose standing moved (at risk, flagged
    by, endangering) are kept, and the others are judged.  Failing tests are those the first pass ``found``, or
    every one held ``among`` the closures of an estate read whole; ``columns`` gives the estate's column lineage
    (built from them without it)."""
    still_open = (open_findings(c, found[c.urn]) if open_findings else found[c.urn] for c in closures)
    at_risk = blast_radius.at_risk_index((f for fs in still_open for f in fs), config)
    if earlier is not None and earlier.at_risk == at_risk:
        spread = earlier
    else:
        spread = _spread(closures, config, at_risk, at_ms, partly)
    if among is None:
        estate, failing = closures, failing_assertion.failing_found(closures, found, at_ms)
    else:
        estate, failing = among, failing_assertion.failing_held(among, at_ms)
    outside = failing_assertion.outside(closures, config, columns or cache(lambda: column_graph(estate)), failing,
                                        at_ms)
    return Detection(
        findings={c.urn: sort_findings([*found[c.urn], *spread.findings[c.urn], *outside.get(c.urn, ())])
                  for c in closures},
        blast_radius=spread.ranked,
        spread=spread,
    )


def _spread(
    closures: Sequence[Closure], config: ScanConfig, at_risk: Mapping[str, tuple[str, ...]], at_ms: int,
    partly: "tuple[Spread, frozenset[str]] | None" = None,
) -> Spread:
    exposure = blast_radius.exposure_index(closures, at_risk)
    state = DetectorState(at_ms=at_ms, exposure=exposure, at_risk=at_risk)
    enabled = config.enabled(_SECOND_PASS)
    before, kept = partly if partly is not None else (None, frozenset())
    earlier = before.findings if before is not None else {}
    # the datasets whose standing moved: at risk now or before but not both, flagged by others, or endangering
    # other models: a kept closure holding none of them has the blast radius it had
    moved = frozenset() if before is None else frozenset(
        u for u in {*at_risk, *before.at_risk}
        if at_risk.get(u) != before.at_risk.get(u) or exposure.get(u) != before.exposure.get(u))

    def radius(closure: Closure) -> tuple[Finding, ...]:
        if closure.urn in kept and closure.urn in earlier and moved.isdisjoint(closure.dataset_urns):
            return earlier[closure.urn]
        return tuple(blast_radius.detect(closure.whole(), config, state)) if enabled else ()

    return Spread(
        at_risk=at_risk,
        findings={c.urn: radius(c) for c in closures},
        ranked=tuple(blast_radius.rank(state)) if enabled else (),
        exposure=exposure,
    )
