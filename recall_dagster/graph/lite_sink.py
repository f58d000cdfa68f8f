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

Records are written in transactions of :data:`~recall_dagster.graph.lite.WRITE_BATCH`
(the bulk path ``LiteGraph.emit_mcps`` takes), each record's callback told once
its transaction ends; the pipeline's ``flush`` (before it commits ingestion
state) and ``close`` write what is still buffered.
"""

from __future__ import annotations

from datahub.ingestion.api.common import RecordEnvelope
from datahub.ingestion.api.sink import Sink, SinkReport, WriteCallback
from datahub.ingestion.sink.datahub_lite import DataHubLiteSinkConfig
from datahub.lite.sqlite_lite_config import SqliteLiteConfig

from recall_dagster.errors import ConfigError, GraphError
from recall_dagster.graph.lite import WRITE_BATCH, LiteGraph


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
        self._pending: list[tuple[RecordEnvelope, WriteCallback]] = []

    def write_record_async(self, record_envelope: RecordEnvelope, write_callback: WriteCallback) -> None:
        self._pending.append((record_envelope, write_callback))
        if len(self._pending) >= WRITE_BATCH:
            self.flush()

    def flush(self) -> None:
        """Write what is buffered in one transaction; a record that cannot be stored is a sink failure."""
        pending, self._pending = self._pending, []
        if not pending:
            return
        refused = self._graph.write_batch([envelope.record for envelope, _ in pending])
        for position, (envelope, callback) in enumerate(pending):
            if position in refused:
                self.report.report_failure(refused[position])
                callback.on_failure(envelope, GraphError(refused[position]), {})
            else:
                self.report.report_record_written(envelope)
                callback.on_success(envelope, {})

    def close(self) -> None:
        """Write what is buffered, run the pipeline's shutdown callbacks, then close the graph (rebuilding
        Lite's browse index)."""
        self.flush()
        super().close()
        self._graph.close()
