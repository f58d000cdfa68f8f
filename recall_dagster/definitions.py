"""The ``recall`` code location: ``dagster dev -m recall_dagster.definitions`` or a workspace entry.

Configured only by ``recall.yaml`` (``RECALL_CONFIG``) and the environment.
"""

from dagster import Definitions, definitions

from recall_dagster.defs import recall_definitions


@definitions
def defs() -> Definitions:
    """Loaded lazily by Dagster's tools."""
    return recall_definitions()
