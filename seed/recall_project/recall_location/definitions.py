"""``dagster dev -m recall_location.definitions`` (from seed/recall_project): the components project's definitions, run in process.

In process because a scan's steps hand each other closures too large to pickle between processes for nothing
(as :mod:`recall_dagster.definitions` does for a location that is not a components project).
"""

from pathlib import Path

from dagster import Definitions, definitions, in_process_executor, load_from_defs_folder


@definitions
def defs() -> Definitions:
    return Definitions.merge(load_from_defs_folder(path_within_project=Path(__file__).parent),
                             Definitions(executor=in_process_executor))
