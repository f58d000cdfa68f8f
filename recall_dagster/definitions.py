"""The ``recall`` code location: ``dagster dev -m recall_dagster.definitions`` or a workspace entry.

Configured only by ``recall.yaml`` (``RECALL_CONFIG``) and the environment.
"""

from dagster import DefaultSensorStatus, Definitions, definitions, in_process_executor

from recall_dagster.defs import recall_definitions


@definitions
def defs() -> Definitions:
    """Loaded lazily by Dagster's tools. Runs in process: a scan's steps hand each other closures too large to
    pickle between processes for nothing. Recall's own location: its reactions and nightly scan are on from the
    first ``dagster dev``."""
    return Definitions.merge(recall_definitions(default_status=DefaultSensorStatus.RUNNING),
                             Definitions(executor=in_process_executor))
