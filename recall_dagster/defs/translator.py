"""Every name Recall gives in a team's Dagster deployment, decided in one place.

Like dagster-dbt's ``DagsterDbtTranslator``: subclass it and override a method
when the defaults do not fit the team's conventions (a key prefix per domain, a
group of its own, job and sensor names its runbooks use). Every factory in
:mod:`recall_dagster.defs` takes one and asks it: asset keys, the group, job,
sensor, schedule and check names, the gate's key, and how an asset key names a
table of the graph. The defaults are the names Recall has always used.
"""

from __future__ import annotations

from typing import Any, Sequence

from dagster import AssetIn, AssetKey, asset

# Recall's own assets, jobs, sensors, schedules and checks, by the names the defaults give them.
ASSETS = ("model_closures", "risk_findings", "impact_tests", "risk_scores", "datahub_writeback", "data_incidents",
          "blind_window", "shard_scans")


class RecallTranslator:
    def group_name(self) -> str:
        """The one group every Recall asset sits in (scan, write-back, incidents, shards): a team's jobs select
        ``AssetSelection.all() - AssetSelection.groups(<it>)`` to leave them out."""
        return "recall"

    def asset_key(self, name: str) -> AssetKey:
        """The key of Recall's own asset ``name`` (one of :data:`ASSETS`, or ``dbt_metadata`` when a dbt recipe
        is configured)."""
        return AssetKey([name])

    def job_name(self, name: str) -> str:
        """Recall's jobs: ``recall_scan``, ``recall_rescan``, ``recall_shards``, ``recall_rollback``."""
        return name

    def sensor_name(self, name: str) -> str:
        """Recall's sensors: ``datahub_assertion_results``, ``mlflow_new_versions``, ``dbt_test_failures``,
        ``shard_merge``."""
        return name

    def schedule_name(self, name: str) -> str:
        """Recall's schedule: ``nightly_scan``."""
        return name

    def check_name(self, name: str) -> str:
        """Recall's asset checks: ``no_model_at_fail_tier`` (on the scores), ``retrain_gate``,
        ``upstream_asset_checks`` and ``measured_impact`` (on a gate), ``metric_gate`` (on a training asset)."""
        return name

    def dataset_name(self, asset_key: AssetKey) -> str:
        """The table an asset writes, as the graph names it or by its trailing parts.

        The default joins the key's parts with dots: dagster-dbt's ``["fct_orders"]``
        and ``["raw", "orders"]`` match ``db.marts.fct_orders`` and ``db.raw.orders``.
        """
        return ".".join(asset_key.path)

    def gate_key(self, training_key: AssetKey) -> AssetKey:
        """The key of the gate asset in front of a training asset: its sibling ``<name>_retrain_gate``."""
        return AssetKey([*training_key.path[:-1], f"{training_key.path[-1]}_retrain_gate"])


def recall_asset(translator: RecallTranslator, name: str, upstream: Sequence[str] = (), **options: Any) -> Any:
    """Dagster's ``@asset`` for Recall's own asset ``name``: keyed and grouped as ``translator`` says, its inputs
    (parameters named after Recall's ``upstream`` assets) wired to their translated keys."""
    return asset(key=translator.asset_key(name), ins={u: AssetIn(key=translator.asset_key(u)) for u in upstream},
                 group_name=translator.group_name(), **options)


def op_name(translator: RecallTranslator, name: str) -> str:
    """The op behind Recall's asset ``name``, which run config addresses (``{"ops": {<it>: ...}}``)."""
    return translator.asset_key(name).to_python_identifier()
