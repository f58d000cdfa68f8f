"""DataHub's own Dagster sensor (acryl-datahub-dagster-plugin) on the demo location, as a Dagster + DataHub team
would add it: every finished run reaches the graph as a data flow per job, a data job per op, and a process
instance per run and per step, each step producing the warehouse tables and Feast exports it materialized.

The plugin writes only to GMS: its sensors build a REST client (``DataHubGraph``) from the configured server
and hand every write to it (``datahub_sensors.py``, ``DatahubSensors.__init__``). On a GMS graph the stock
sensor runs unchanged. On the embedded stack's Lite file the same sensors run with that one client replaced
by the Lite file (:class:`_LiteClient`): the runs they read, the URNs they name and the MCPs they build are the
plugin's own.
"""

from __future__ import annotations

from typing import Callable, Sequence

from dagster import AssetsDefinition, DefaultSensorStatus, SensorDefinition, SensorEvaluationContext, SkipReason, sensor
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata.schema_classes import MetadataChangeEventClass, MetadataChangeProposalClass
from datahub.ingestion.graph.client import DatahubClientConfig
from datahub.utilities.urns.dataset_urn import DatasetUrn
from datahub_dagster_plugin.client.dagster_generator import DatahubDagsterSourceConfig
from datahub_dagster_plugin.sensors.datahub_sensors import DatahubSensors, make_datahub_sensor

from ml_models.registry import FeatureRegistry
from recall_dagster.graph import LiteGraph
from recall_dagster.settings import Settings
from seed.dagster.warehouse import raw_layer
from seed.ingest.enrich import dataset_urn, export_urn

SENSOR = "datahub_sensor"
INTERVAL_SECONDS = 30


def datahub_sensor(
    settings: Settings, registry: FeatureRegistry, warehouse: Sequence[AssetsDefinition],
    feast: AssetsDefinition, default_status: DefaultSensorStatus,
) -> SensorDefinition:
    """The plugin's sensor over this location's runs, writing where the estate's graph lives.

    Its steps' outputs are the datasets DataHub's dbt and feast sources already name (``warehouse`` assets are
    keyed ``[schema, table]``, Feast's ``[feast, view]``), so a table's producing Dagster step joins the table
    itself rather than a ``dagster`` dataset beside it; ``emit_assets`` stays off for the same reason.
    """
    config = DatahubDagsterSourceConfig(
        datahub_client_config=DatahubClientConfig(server=settings.graph, token=settings.gms_token),
        env=registry.env,
        emit_assets=False,
        enable_asset_query_metadata_parsing=False,
        asset_keys_to_dataset_urn_converter=_converter(registry, warehouse, feast),
    )
    if settings.graph_is_remote:
        return make_datahub_sensor(config, name=SENSOR, minimum_interval_seconds=INTERVAL_SECONDS,
                                   default_status=default_status)

    @sensor(name=SENSOR, minimum_interval_seconds=INTERVAL_SECONDS, default_status=default_status,
            description="DataHub's Dagster plugin: each finished run of this location into the Lite graph.")
    def lite_datahub_sensor(context: SensorEvaluationContext) -> SkipReason:
        graph = LiteGraph(settings.graph)
        try:
            for each in _LiteSensors(_LiteClient(graph), config).sensors:
                each.evaluate_tick(context)
        finally:
            graph.close()
        return SkipReason("the plugin's run status sensors wrote what they found")

    return lite_datahub_sensor


def location_datahub_sensor(
    settings: Settings, registry: FeatureRegistry, dbt: AssetsDefinition, feast: AssetsDefinition
) -> SensorDefinition:
    """The demo location's sensor, running: its warehouse is the raw layer and the dbt models."""
    return datahub_sensor(settings, registry, [raw_layer, dbt], feast, DefaultSensorStatus.RUNNING)


def _converter(
    registry: FeatureRegistry, warehouse: Sequence[AssetsDefinition], feast: AssetsDefinition
) -> Callable[[Sequence[str]], DatasetUrn | None]:
    """Asset key -> the dataset DataHub's sources name; None for assets that are no dataset (training, gates)."""
    urns = {tuple(key.path): dataset_urn(registry, ".".join([registry.warehouse_database, *key.path]))
            for assets in warehouse for key in assets.keys}
    urns.update({tuple(key.path): export_urn(registry, key.path[-1]) for key in feast.keys})

    def convert(asset_key: Sequence[str]) -> DatasetUrn | None:
        urn = urns.get(tuple(asset_key))
        return DatasetUrn.from_string(urn) if urn else None

    return convert


class _LiteClient:
    """What the plugin's sensors ask of their DataHub client, answered by the Lite file: writes only, since
    ``emit_assets`` and query parsing, its two readers, are off."""

    def __init__(self, graph: LiteGraph) -> None:
        self._graph = graph

    def test_connection(self) -> None:
        """The file opened, so there is nothing further to reach."""

    def emit(
        self,
        item: MetadataChangeProposalWrapper | MetadataChangeProposalClass | MetadataChangeEventClass,
        callback: Callable[[Exception, str], None] | None = None) -> None:
        self._graph.emit(item, callback)

    def emit_mcp(self, mcp: MetadataChangeProposalWrapper) -> None:
        self._graph.emit(mcp)


class _LiteSensors(DatahubSensors):
    """The plugin's sensors, their client the Lite file."""

    def __init__(self, client: _LiteClient, config: DatahubDagsterSourceConfig) -> None:
        self._client = client
        super().__init__(config)

    @property
    def graph(self) -> _LiteClient:  # type: ignore[override]
        return self._client

    @graph.setter
    def graph(self, rest: object) -> None:
        """The REST client ``DatahubSensors`` builds for the configured server is dropped unopened."""
