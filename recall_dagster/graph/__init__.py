"""The only door to a metadata store: pick the adapter from where the graph lives.

Everything above ``graph/`` asks :func:`open_graph` for a :class:`MetadataGraph`
and never learns whether a DataHub Lite file or a GMS server answers.
"""

from __future__ import annotations

from recall_dagster.graph.gms import GmsGraph
from recall_dagster.graph.lite import LiteGraph
from recall_dagster.graph.port import AspectMap, Direction, MetadataGraph, WriteReport
from recall_dagster.settings import Settings

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
    (``DATAHUB_GMS_TOKEN``).  ``read_only`` applies to Lite files: a read-only
    open never creates a file and fails on a missing one.
    """
    if isinstance(settings_or_target, Settings):
        target, token = settings_or_target.graph, token or settings_or_target.gms_token
    else:
        target = settings_or_target
    if target.startswith(("http://", "https://")):
        return GmsGraph(target, token)
    return LiteGraph(target, read_only=read_only)
