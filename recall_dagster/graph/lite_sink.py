"""An ingestion sink that writes into a DataHub Lite file through :class:`LiteGraph`.

DataHub's own ``datahub-lite`` sink drops PATCH proposals with a warning, and
the dbt source links each warehouse table to its dbt node with exactly such a
patch (an ``upstreamLineage`` entry, plus ``siblings``), so a graph it fills
has the chain feature -> table -> dbt node broken.  This sink takes the same
config block and writes every record through :class:`LiteGraph`, which merges
patches into the stored aspects the way GMS does::

    sink:
      type: recall_dagster.graph.lite_sink.RecallLiteSink
      config:
        type: sqlite
        config:
          file: ~/.datahub/lite/datahub.db

DataHub resolves a dotted ``type`` by importing the class, so no plugin
registration is needed.
"""

from __future__ import annotations

from datahub.ingestion.api.common import RecordEnvelope
from datahub.ingestion.api.sink import Sink, SinkReport, WriteCallback
from datahub.ingestion.sink.datahub_lite import DataHubLiteSinkConfig
from datahub.lite.sqlite_lite_config import SqliteLiteConfig

from recall_dagster.errors import ConfigError, GraphError
from recall_dagster.graph.lite import LiteGraph


def _graph_file(config: DataHubLiteSinkConfig) -> str:
    """The file to write, refusing the ``datahub-lite`` options this sink cannot honour.

    :class:`LiteGraph` opens SQLite files only, with the SDK's default pragmas,
    and forwards nothing; ignoring such settings would quietly write somewhere
    or somehow other than the recipe says.
    """
    if config.type != "sqlite":
        raise ConfigError(f"RecallLiteSink writes sqlite DataHub Lite files, not type {config.type!r}")
    if config.forward_to is not None:
        raise ConfigError("RecallLiteSink does not forward records: remove forward_to from the sink config")
    sqlite = SqliteLiteConfig.model_validate(config.config)
    if sqlite.read_only or sqlite.options:
        raise ConfigError("RecallLiteSink takes only `file` in its sqlite config (no read_only, no options)")
    return sqlite.file


class RecallLiteSink(Sink[DataHubLiteSinkConfig, SinkReport]):
    """``datahub-lite`` with PATCH proposals applied instead of dropped."""

    def __post_init__(self) -> None:
        self._graph = LiteGraph(_graph_file(self.config))

    def write_record_async(self, record_envelope: RecordEnvelope, write_callback: WriteCallback) -> None:
        """Write synchronously; a record that cannot be stored is a sink failure, not a warning."""
        try:
            self._graph.emit(record_envelope.record)
        except GraphError as err:
            self.report.report_failure(str(err))
            write_callback.on_failure(record_envelope, err, {})
        else:
            self.report.report_record_written(record_envelope)
            write_callback.on_success(record_envelope, {})

    def close(self) -> None:
        """Run the pipeline's shutdown callbacks, then close the graph, rebuilding Lite's browse index."""
        super().close()
        self._graph.close()
