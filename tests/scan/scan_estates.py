"""Load hand-written MCP files the way any DataHub user would: ``datahub ingest``.

The files under ``fixtures/`` are written in DataHub's file format and loaded
with DataHub's own ``file`` source and ``datahub-lite`` sink, so the scanner
is tested on data the project did not write.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

os.environ.setdefault("DATAHUB_TELEMETRY_ENABLED", "false")

from datahub.ingestion.run.pipeline import Pipeline  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures"
SCAN_AT_MS = 1_748_736_000_000  # 2025-06-01T00:00:00Z, the instant the fixtures are dated against


def exact(result) -> tuple[list[str], list[str]]:  # noqa: ANN001 - a ScanResult
    """Everything a scan found, whole: each finding as ``--json`` gives it (message and evidence) with its
    model's tier, and the blast radius; what a rescan must equal a full scan in."""
    findings = sorted(json.dumps([m.closure.urn, m.score.tier, f.contract(None).as_json()], sort_keys=True, default=str)
                      for m in result.models for f in m.findings)
    return findings, sorted(json.dumps(b.contract().as_json(), sort_keys=True, default=str) for b in result.blast_radius)


def ingest(db: Path, *fixtures: str) -> Path:
    """Run the file source -> datahub-lite sink pipeline for each fixture, in order."""
    for name in fixtures:
        pipeline = Pipeline.create(
            {
                "source": {"type": "file", "config": {"path": str(FIXTURES / name)}},
                "sink": {"type": "datahub-lite", "config": {"type": "sqlite", "config": {"file": str(db)}}},
            }
        )
        pipeline.run()
        pipeline.raise_from_status()
    return db
