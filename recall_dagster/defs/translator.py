"""Where naming must be decided between a team's Dagster assets and the DataHub graph.

Like dagster-dbt's ``DagsterDbtTranslator``: subclass it and override a method
when the defaults do not fit the team's keys.
"""

from __future__ import annotations

from dagster import AssetKey

# The one group every Recall asset sits in (scan, write-back, incidents, shards): a team's jobs select
# ``AssetSelection.all() - AssetSelection.groups(GROUP)`` to leave them out.
GROUP = "recall"


class RecallTranslator:
    def dataset_name(self, asset_key: AssetKey) -> str:
        """The table an asset writes, as the graph names it or by its trailing parts.

        The default joins the key's parts with dots: dagster-dbt's ``["fct_orders"]``
        and ``["raw", "orders"]`` match ``db.marts.fct_orders`` and ``db.raw.orders``.
        """
        return ".".join(asset_key.path)

    def gate_key(self, training_key: AssetKey) -> AssetKey:
        """The key of the gate asset in front of a training asset: its sibling ``<name>_retrain_gate``."""
        return AssetKey([*training_key.path[:-1], f"{training_key.path[-1]}_retrain_gate"])
