"""Malformed estates through scan, gate, blind window, incidents, write-back dry-run and protect: nothing escapes
but a RecallError with its message. ``benchmarks/fuzz_report.py --estates 1000`` runs the same at volume."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings

from tests.fuzz.estates import estates
from tests.fuzz.exercise import exercise


@settings(max_examples=8, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(estates(fan_in=2_000))
def test_a_malformed_estate_gets_answers_or_clear_errors_never_a_traceback(mcps) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        outcome = exercise(mcps, Path(scratch))
    assert not outcome.crashes, outcome.crashes[0]
