"""Pure detectors: ``(closure, config, state) -> list[Finding]``, one module each."""

from recall_dagster.detect.config import ScanConfig
from recall_dagster.detect.finding import Finding, Severity, count_by_severity
from recall_dagster.detect.catalogue import DETECTORS, Detection, check_config
from recall_dagster.detect.state import DetectorState, Exposure

__all__ = [
    "DETECTORS",
    "Detection",
    "DetectorState",
    "Exposure",
    "Finding",
    "ScanConfig",
    "Severity",
    "check_config",
    "count_by_severity",
]
