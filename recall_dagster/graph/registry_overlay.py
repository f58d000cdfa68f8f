"""The graph as the model registry completes it: every MLflow version carries the aliases MLflow holds for it.

DataHub's mlflow source writes ``versionProperties.aliases`` from
``search_model_versions``, which MLflow 2.20's SQL store answers with no
aliases: on a stock stack no version is marked production and a scan finds no
model to judge. The registry is the source of truth for its own aliases, so
every reader (scan, gate, incidents, blind window, impact, protect, diagnose,
MCP, the Dagster assets) sees them through this one adapter, merged into the
aspect the source meant to fill; nothing is written to the store. A version is
matched by reading, never by building a URN: its registered model group on
the ``mlflow`` platform and its ``versionProperties.version``.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence

from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata.schema_classes import MLModelPropertiesClass, VersionPropertiesClass, VersionTagClass
from datahub.metadata.urns import MlModelGroupUrn
from datahub.metadata.schema_classes import _Aspect

from recall_dagster.graph.port import AspectMap, Changes, Direction, MetadataGraph, WriteReport
from recall_dagster.registry import RegistryAliases

MLFLOW_PLATFORM = "urn:li:dataPlatform:mlflow"
_REGISTRY = "|registry:"
_VERSION, _PROPERTIES = VersionPropertiesClass.ASPECT_NAME, MLModelPropertiesClass.ASPECT_NAME


class RegistryAliasGraph:
    """A :class:`MetadataGraph` whose MLflow versions carry the registry's aliases, read once, when first needed."""

    def __init__(self, graph: MetadataGraph, read_aliases: Callable[[], RegistryAliases | None]) -> None:
        self._graph, self._read_aliases = graph, read_aliases
        self._aliases: RegistryAliases | None = None
        self._read = False

    @property
    def location(self) -> str:
        return self._graph.location

    @property
    def registry(self) -> RegistryAliases | None:
        """The registry's aliases (None: no registry to ask)."""
        if not self._read:
            self._aliases, self._read = self._read_aliases(), True
        return self._aliases

    def get_aspects(self, urns: Sequence[str], aspects: Sequence[type[_Aspect]] | None = None) -> AspectMap:
        found = self._graph.get_aspects(urns, aspects)
        wanted = aspects is None or VersionPropertiesClass in aspects
        models = [u for u in urns if u.startswith("urn:li:mlModel:") and _VERSION in found.get(u, {})]
        if not wanted or not models or not (registry := self.registry) or not registry.aliases:
            return found
        missing = [u for u in models if _PROPERTIES not in found[u]]
        groups = self._graph.get_aspects(missing, [MLModelPropertiesClass]) if missing else {}
        for urn in models:
            props = found[urn].get(_PROPERTIES) or groups.get(urn, {}).get(_PROPERTIES)
            version = found[urn][_VERSION]
            held = _registry_aliases(registry, props, version)  # type: ignore[arg-type]
            if held:
                found[urn] = {**found[urn], _VERSION: _with_aliases(version, held)}  # type: ignore[arg-type]
        return found

    def related(self, urns: Sequence[str], relationship: str, direction: Direction = "outgoing") -> dict[str, list[str]]:
        return self._graph.related(urns, relationship, direction)

    def timeseries(self, urns: Sequence[str], aspect: type[_Aspect], limit: int = 100) -> dict[str, list[_Aspect]]:
        return self._graph.timeseries(urns, aspect, limit)

    def timeseries_values(
        self, urns: Sequence[str], aspect: type[_Aspect], paths: Sequence[str], limit: int = 100
    ) -> dict[str, list[tuple[Any, ...]]]:
        return self._graph.timeseries_values(urns, aspect, paths, limit)

    def list_urns(self, entity_type: str) -> list[str]:
        return self._graph.list_urns(entity_type)

    def changes_since(self, token: str | None) -> Changes:
        """The store's changes, unless an alias moved since ``token``: then everything must be read again."""
        inner, _, digest = (token or "").partition(_REGISTRY)
        changes = self._graph.changes_since(inner if token is not None else None)
        registry = self.registry
        now = registry.digest if registry else "none"
        return Changes(f"{changes.token}{_REGISTRY}{now}", changes.urns if digest == now else None)

    def emit_mcps(self, mcps: Iterable[MetadataChangeProposalWrapper]) -> WriteReport:
        return self._graph.emit_mcps(mcps)

    def close(self) -> None:
        self._graph.close()


def _registry_aliases(
    registry: RegistryAliases, props: MLModelPropertiesClass | None, version: VersionPropertiesClass
) -> tuple[str, ...]:
    number = version.version.versionTag if version.version else None
    if props is None or not number:
        return ()
    held: list[str] = []
    for group in props.groups or ():
        try:
            parsed = MlModelGroupUrn.from_string(group)
        except Exception:  # a group URN some other tool wrote malformed: it names no registered model
            continue
        if parsed.platform == MLFLOW_PLATFORM:
            held.extend(registry.aliases.get((parsed.name, number), ()))
    return tuple(held)


def _with_aliases(version: VersionPropertiesClass, held: Sequence[str]) -> VersionPropertiesClass:
    """A copy of ``version`` with the registry's aliases added to those the graph already records."""
    copy = VersionPropertiesClass.from_obj(version.to_obj())
    present = {a.versionTag for a in copy.aliases or ()}
    copy.aliases = [*(copy.aliases or ()), *(VersionTagClass(versionTag=a) for a in held if a not in present)]
    return copy
