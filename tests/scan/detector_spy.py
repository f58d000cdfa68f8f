"""A spy on the detectors: how many closures each is run on, for tests of what a rescan judges again."""

from __future__ import annotations

from dataclasses import replace

import pytest

from recall_dagster.detect import catalogue


def count_detector_runs(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Every detector, counting the closures it is run on (in this process)."""
    runs: dict[str, int] = {}

    def counted(detector: catalogue.Detector) -> catalogue.Detector:
        def detect(closure, config, state):  # noqa: ANN001, ANN202 - the detector signature
            runs[detector.name] = runs.get(detector.name, 0) + 1
            return detector.detect(closure, config, state)

        return replace(detector, detect=detect)

    monkeypatch.setattr(catalogue, "DETECTORS", tuple(counted(d) for d in catalogue.DETECTORS))
    return runs


def volatile_detectors() -> set[str]:
    """The detectors judged again on an unchanged estate whose baselines are unchanged too."""
    return {d.name for d in catalogue.DETECTORS if d.volatile}
