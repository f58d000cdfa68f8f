"""Every detector, in contract order, and the two-pass run over an estate's closures.

Pass one runs each detector on each closure.  Pass two runs ``blast_radius``,
which needs to know what pass one found across *all* closures; it gets that
through the state, so it stays a pure ``(closure, config, state)`` function.
"""

from __future__ import annotations

from dataclasses import dataclass
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
from recall_dagster.detect.config import RecallConfig
from recall_dagster.detect.finding import Finding
from recall_dagster.detect.state import DetectorState, SchemaBaseline
from recall_dagster.errors import ConfigError
from recall_dagster.estate import ModelClosure

DetectFn = Callable[[ModelClosure, RecallConfig, DetectorState], list[Finding]]


@dataclass(frozen=True)
class Detector:
    name: str
    detect: DetectFn
    cases: tuple[str, ...]  # severity cases it reads from recall.yaml
    identity: Callable[[Finding], Any] | None  # what identifies a finding's evidence, when not all of it
    volatile: bool = False  # reads more than the closure and the config (the instant, the baselines)


DETECTORS: tuple[Detector, ...] = tuple(
    Detector(m.NAME, m.detect, m.CASES, getattr(m, "identity", None), getattr(m, "VOLATILE", False))
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


def check_config(config: RecallConfig) -> None:
    """Fail before scanning when recall.yaml misses a detector, a case, or names an unknown one."""
    known = set(_ORDER)
    unknown = sorted((set(config.detectors) | set(config.blast_radius.at_risk_detectors)) - known)
    if unknown:
        raise ConfigError(f"{config.source}: unknown detector(s) {', '.join(unknown)}; known: {', '.join(_ORDER)}")
    for d in DETECTORS:
        if d.name not in config.detectors:
            raise ConfigError(f"{config.source}: detectors.{d.name} is missing")
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


OpenFindings = Callable[[ModelClosure, Sequence[Finding]], Sequence[Finding]]


Found = dict[str, list[Finding]]  # model URN -> what the first pass found


def run_detectors(
    closures: Sequence[ModelClosure],
    config: RecallConfig,
    schema_baselines: Mapping[str, SchemaBaseline],
    open_findings: OpenFindings | None = None,
) -> Detection:
    """Every enabled detector over every closure; ``blast_radius`` last, over what the others found that is
    still open (``open_findings`` leaves out what an acknowledgement covers: an accepted risk endangers no one)."""
    return second_pass(closures, first_pass(closures, config, schema_baselines), config, open_findings)


def first_pass(
    closures: Sequence[ModelClosure],
    config: RecallConfig,
    schema_baselines: Mapping[str, SchemaBaseline],
    judged: Mapping[str, Sequence[Finding]] | None = None,
) -> Found:
    """Every enabled detector but ``blast_radius``: each needs one closure only, so shards of an estate
    can run this pass apart.

    ``judged`` holds, per model, what the steady detectors found in the same closure under the same
    config before (:func:`steady`): they are not run again on it, the volatile ones are.
    """
    enabled = [d for d in DETECTORS if config.enabled(d.name) and d.name != _SECOND_PASS]
    state = DetectorState(schema_baselines=schema_baselines)
    earlier = judged or {}

    def findings(closure: ModelClosure) -> list[Finding]:
        kept = earlier.get(closure.urn)
        if kept is None:
            return [f for d in enabled for f in d.detect(closure, config, state)]
        by_detector: dict[str, list[Finding]] = {}
        for k in kept:
            by_detector.setdefault(k.detector, []).append(k)
        return [f for d in enabled
                for f in (d.detect(closure, config, state) if d.volatile else by_detector.get(d.name, ()))]

    return {c.urn: findings(c) for c in closures}


def steady(found: Found) -> dict[str, tuple[Finding, ...]]:
    """What the detectors that read only the closure and the config found: the verdicts a rescan may keep."""
    volatile = {d.name for d in DETECTORS if d.volatile}
    return {urn: tuple(f for f in fs if f.detector not in volatile) for urn, fs in found.items()}


def second_pass(
    closures: Sequence[ModelClosure], found: Found, config: RecallConfig, open_findings: OpenFindings | None = None
) -> Detection:
    """``blast_radius`` over the whole estate: ``closures`` and what the first pass ``found`` in each."""
    still_open = (open_findings(c, found[c.urn]) if open_findings else found[c.urn] for c in closures)
    at_risk = blast_radius.at_risk_index((f for fs in still_open for f in fs), config)
    state = DetectorState(exposure=blast_radius.exposure_index(closures, at_risk), at_risk=at_risk)
    enabled = config.enabled(_SECOND_PASS)
    second = {c.urn: blast_radius.detect(c, config, state) if enabled else [] for c in closures}
    return Detection(
        findings={c.urn: sort_findings([*found[c.urn], *second[c.urn]]) for c in closures},
        blast_radius=tuple(blast_radius.rank(state)) if enabled else (),
    )
