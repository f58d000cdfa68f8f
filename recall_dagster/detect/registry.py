"""Every detector, in contract order, and the two-pass run over an estate's closures.

Pass one runs each detector on each closure.  Pass two runs ``blast_radius``,
which needs to know what pass one found across *all* closures; it gets that
through the state, so it stays a pure ``(closure, config, state)`` function.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
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


DETECTORS: tuple[Detector, ...] = tuple(
    Detector(m.NAME, m.detect, m.CASES, getattr(m, "identity", None))
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


def run_detectors(
    closures: Sequence[ModelClosure],
    config: RecallConfig,
    schema_baselines: Mapping[str, SchemaBaseline],
    open_findings: OpenFindings | None = None,
) -> Detection:
    """Every enabled detector over every closure; ``blast_radius`` last, over what the others found that is
    still open (``open_findings`` leaves out what an acknowledgement covers: an accepted risk endangers no one)."""
    enabled = [d for d in DETECTORS if config.enabled(d.name)]
    state = DetectorState(schema_baselines=schema_baselines, exposure=blast_radius.exposure_index(closures))
    found: dict[str, list[Finding]] = {c.urn: [] for c in closures}
    for closure in closures:
        for d in enabled:
            if d.name != _SECOND_PASS:
                found[closure.urn].extend(d.detect(closure, config, state))
    still_open = (open_findings(c, found[c.urn]) if open_findings else found[c.urn] for c in closures)
    state = replace(state, at_risk=blast_radius.at_risk_index((f for fs in still_open for f in fs), config))
    for closure in closures:
        for d in enabled:
            if d.name == _SECOND_PASS:
                found[closure.urn].extend(d.detect(closure, config, state))
    return Detection(
        findings={urn: sort_findings(fs) for urn, fs in found.items()},
        blast_radius=tuple(blast_radius.rank(state)) if config.enabled(_SECOND_PASS) else (),
    )
