"""The only door to a metadata store: pick the adapter from where the graph lives.

Everything above ``graph/`` asks :func:`open_graph` for a :class:`MetadataGraph`
and never learns whether a DataHub Lite file or a GMS server answers.
"""

from __future__ import annotations

from recall_dagster.graph.lite import LiteGraph
from recall_dagster.graph.port import AspectMap, Direction, MetadataGraph, WriteReport
from recall_dagster.graph.registry_overlay import RegistryGraph
from recall_dagster.mlflow_registry import RegistryLimits, read_registry
from recall_dagster.settings import Settings

# The shipped ``impact.registry`` limits: a registry that does not answer within them fails the command (exit 3).
ALIAS_READ_LIMITS = RegistryLimits(timeout_seconds=30, retries=2)

__all__ = [
    "AspectMap",
    "Direction",
    "GmsGraph",
    "LiteGraph",
    "MetadataGraph",
    "WriteReport",
    "open_graph",
]


def open_graph(
    settings_or_target: Settings | str, token: str | None = None, read_only: bool = False
) -> MetadataGraph:
    """GMS for an http(s) URL, a DataHub Lite file for anything else.

    With :class:`Settings`, the token defaults to ``settings.gms_token``
    (``DATAHUB_GMS_TOKEN``), and the graph's MLflow versions carry the aliases
    the settings' registry holds, and the Dagster run that trained each (:mod:`recall_dagster.graph.registry_overlay`).  ``read_only`` applies to Lite files: a read-only
    open never creates a file and fails on a missing one.
    """
    if not isinstance(settings_or_target, Settings):
        return _store(settings_or_target, token, read_only)
    settings = settings_or_target
    graph = _store(settings.graph, token or settings.gms_token, read_only)
    return RegistryGraph(graph, lambda: read_registry(settings.mlflow_uri, ALIAS_READ_LIMITS))


def _store(target: str, token: str | None, read_only: bool) -> MetadataGraph:
    if target.startswith(("http://", "https://")):
        from recall_dagster.graph.gms import GmsGraph  # its REST client costs a command on a Lite file ~0.3 s

        return GmsGraph(target, token)
    return LiteGraph(target, read_only=read_only)


def __getattr__(name: str) -> object:
    """``GmsGraph`` on first use: importing the package stays free of DataHub's REST emitter."""
    if name == "GmsGraph":
        from recall_dagster.graph.gms import GmsGraph

        return GmsGraph
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
