"""The foreign estate's files and the next dbt run, shared by the fixtures and the tests."""

from __future__ import annotations

from pathlib import Path

from recall_dagster.settings import Settings
from tests.scan.scan_estates import ingest

FIXTURES = Path(__file__).parent / "fixtures"
# The fixtures are dated around 2025-06-01; a window this wide keeps them fresh whenever the tests run.
OVERLAY = {"freshness": {"default_window_hours": 10_000_000}}


def fail_the_test(shop: Settings) -> None:
    """The team's next dbt run fails its not_null test, and DataHub's dbt source reports it."""
    ingest(Path(shop.graph), str(FIXTURES / "failing_run.json"))
