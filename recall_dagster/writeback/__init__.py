"""Write Recall's diagnosis back into DataHub: the only room that writes.

Five write paths, each planned as whole-aspect MCPs with deterministic URNs and
sent through the graph port: assertions (with a run event per scan),
structured properties, tier tags, incidents and pre-mortem documents.  Local
evidence is written first; failed writes are retried with backoff, and run
events that still fail wait for the next scan.
"""

from recall_dagster.writeback.config import WritebackConfig, load_writeback_config, parse_writeback_config
from recall_dagster.writeback.plan import Plan, build_plan
from recall_dagster.writeback.report import WritebackReport
from recall_dagster.writeback.run import dry_run, write_back
from recall_dagster.writeback.writes import Write

__all__ = [
    "Plan",
    "Write",
    "WritebackConfig",
    "WritebackReport",
    "build_plan",
    "dry_run",
    "load_writeback_config",
    "parse_writeback_config",
    "write_back",
]
