"""The incident lifecycle as assets: data incidents raised and resolved, and the blind window.

They run in the scan and rescan jobs, after the ingestion, so the dbt-failure
sensor's rescan drives a failing test all the way to an incident naming the
poisoned features, and a passing one to its postmortem.
"""

import time
from typing import Any

from dagster import Failure, MaterializeResult, MetadataValue, asset

from recall_dagster.defs.resources import RecallResource
from recall_dagster.defs.scan import INGEST_KEY
from recall_dagster.lifecycle import blind_window_report, load_lifecycle_config, sync_incidents
from recall_dagster.lifecycle.markdown import blind_window_table, incidents_table
from recall_dagster.writeback import load_writeback_config

GROUP = "incidents"


@asset(group_name=GROUP, deps=[INGEST_KEY], kinds={"datahub"})
def data_incidents(recall: RecallResource) -> MaterializeResult:
    """``recall incidents sync``: raise, update and resolve incidents to match the tests now."""
    config_path = recall.home.config_path or None
    with recall.open_graph(read_only=False) as graph:
        synced = sync_incidents(
            graph,
            recall.settings(),
            recall.config(),
            load_lifecycle_config(config_path),
            int(time.time() * 1000),
            load_writeback_config(config_path).retry,
        ).to_json()
    metadata: dict[str, Any] = {
        **{what: len(synced[what]) for what in ("raised", "updated", "resolved", "active")},
        "incidents": MetadataValue.md(incidents_table(synced)),
    }
    if synced["failures"]:
        raise Failure(f"{len(synced['failures'])} incident write(s) did not land; the next run retries them",
                      metadata=metadata)
    return MaterializeResult(metadata=metadata)


@asset(group_name=GROUP, deps=[data_incidents])
def blind_window(recall: RecallResource) -> MaterializeResult:
    """``recall blind-window``: which model versions trained while the data was bad, and where to roll back."""
    config_path = recall.home.config_path or None
    with recall.open_graph() as graph:
        report = blind_window_report(
            graph, recall.config(), load_lifecycle_config(config_path), None, int(time.time() * 1000)
        ).to_json()
    return MaterializeResult(
        metadata={
            "contaminated_live": ", ".join(report["contaminated_live"]) or "none",
            "versions": MetadataValue.md(blind_window_table(report)),
        }
    )
