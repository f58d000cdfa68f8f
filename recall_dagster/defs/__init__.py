"""Dagster definitions only: assets, asset checks, sensors, schedules, jobs and resources.

``workspace.yaml`` loads :data:`defs`; the logic lives in the rest of
``recall_dagster`` and is shared with the ``recall`` CLI.
"""

from dagster import Definitions, definitions

from recall_dagster.defs.build import build_definitions


@definitions
def defs() -> Definitions:
    """Loaded lazily by Dagster's tools, configured from the environment."""
    return build_definitions()


__all__ = ["build_definitions", "defs"]
