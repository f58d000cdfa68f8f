"""The graph as the model registry completes it: every MLflow version carries the aliases MLflow holds for it,
and the Dagster run that trained it.

DataHub's mlflow source writes ``versionProperties.aliases`` from
``search_model_versions``, which MLflow 2.20's SQL store answers with no
aliases: on a stock stack no version is marked production and a scan finds no
model to judge. It also drops run tags, among them dagster-mlflow's
``dagster_run_id``. The registry is the source of truth for both, so every
reader (scan, gate, incidents, blind window, impact, protect, diagnose, MCP,
the Dagster assets) sees them through this one adapter, merged into the
aspects the source fills (the run as the version's ``dagster_run_id`` custom
property, where a version tag of that name would land); nothing is written to
the store. A version is matched by reading, never by building a URN: its
registered model group on the ``mlflow`` platform and its
``versionProperties.version``.
"""

from __future__ import annotations

from typing import Callable, Sequence, cast

from datahub.metadata.schema_classes import MLModelPropertiesClass, VersionPropertiesClass, VersionTagClass
from datahub.metadata.urns import MlModelGroupUrn
from datahub.metadata.schema_classes import _Aspect

from recall_dagster.graph.overlay import Overlay
from recall_dagster.graph.port import AspectMap, Changes, MetadataGraph, aspect_of
from recall_dagster.run_tags import DAGSTER_RUN_TAG
from recall_dagster.mlflow_registry import RegistryFacts

MLFLOW_PLATFORM = "urn:li:dataPlatform:mlflow"
_REGISTRY = "|registry:"
_VERSION, _PROPERTIES = VersionPropertiesClass.ASPECT_NAME, MLModelPropertiesClass.ASPECT_NAME


class RegistryGraph(Overlay):
    """A :class:`MetadataGraph` whose MLflow versions carry the registry's facts, read once, when first needed."""

    def __init__(self, graph: MetadataGraph, read_registry: Callable[[], RegistryFacts | None]) -> None:
        super().__init__(graph)
        self._read_registry = read_registry
        self._facts: RegistryFacts | None = None
        self._read = False

    @property
    def registry(self) -> RegistryFacts | None:
        """The registry's facts (None: no registry to ask)."""
        if not self._read:
            self._facts, self._read = self._read_registry(), True
        return self._facts

    def get_aspects(self, urns: Sequence[str], aspects: Sequence[type[_Aspect]] | None = None) -> AspectMap:
        found = self._graph.get_aspects(urns, aspects)
        wanted = aspects is None or VersionPropertiesClass in aspects or MLModelPropertiesClass in aspects
        models = [u for u in urns if u.startswith("urn:li:mlModel:")]
        if not wanted or not models or not (registry := self.registry) or not (registry.aliases or
                                                                             registry.dagster_runs):
            return found
        partial = [u for u in models if u in found and not (_VERSION in found[u] and _PROPERTIES in found[u])]
        extra = self._graph.get_aspects(partial, [VersionPropertiesClass, MLModelPropertiesClass]) if partial else {}
        for urn in models:
            if urn not in found:
                continue
            have = {**extra.get(urn, {}), **found[urn]}
            keys = _registry_keys(aspect_of(have, MLModelPropertiesClass), aspect_of(have, VersionPropertiesClass))
            if not keys:
                continue
            aspects_of = dict(found[urn])
            held = tuple(a for key in keys for a in registry.aliases.get(key, ()))
            if held and _VERSION in aspects_of:  # an aspect under its own name: of that class
                aspects_of[_VERSION] = _with_aliases(cast(VersionPropertiesClass, aspects_of[_VERSION]), held)
            run = next((registry.dagster_runs[key] for key in keys if key in registry.dagster_runs), None)
            if run and _PROPERTIES in aspects_of:
                aspects_of[_PROPERTIES] = _with_run(cast(MLModelPropertiesClass, aspects_of[_PROPERTIES]), run)
            found[urn] = aspects_of
        return found

    def changes_since(self, token: str | None) -> Changes:
        """The store's changes, unless an alias moved since ``token``: then everything must be read again."""
        inner, _, digest = (token or "").partition(_REGISTRY)
        changes = self._graph.changes_since(inner if token is not None else None)
        registry = self.registry
        now = registry.digest if registry else "none"
        return Changes(f"{changes.token}{_REGISTRY}{now}", changes.urns if digest == now else None, changes.listed)


def _registry_keys(
    props: MLModelPropertiesClass | None, version: VersionPropertiesClass | None
) -> tuple[tuple[str, str], ...]:
    """The (registered model, version) pairs the registry knows this mlModel by: one per MLflow group."""
    number = version.version.versionTag if version is not None and version.version else None
    if props is None or not number:
        return ()
    keys: list[tuple[str, str]] = []
    for group in props.groups or ():
        try:
            parsed = MlModelGroupUrn.from_string(group)
        except Exception:  # a group URN some other tool wrote malformed: it names no registered model
            continue
        if parsed.platform == MLFLOW_PLATFORM:
            keys.append((parsed.name, number))
    return tuple(keys)


def _with_run(props: MLModelPropertiesClass, run: str) -> MLModelPropertiesClass:
    """A copy of ``props`` naming the Dagster run, unless the graph already records one (a version tag)."""
    if (props.customProperties or {}).get(DAGSTER_RUN_TAG):
        return props
    copy = MLModelPropertiesClass.from_obj(props.to_obj())
    copy.customProperties = {**(copy.customProperties or {}), DAGSTER_RUN_TAG: run}
    return copy


def _with_aliases(version: VersionPropertiesClass, held: Sequence[str]) -> VersionPropertiesClass:
    """A copy of ``version`` with the registry's aliases added to those the graph already records."""
    copy = VersionPropertiesClass.from_obj(version.to_obj())
    present = {a.versionTag for a in copy.aliases or ()}
    copy.aliases = [*(copy.aliases or ()), *(VersionTagClass(versionTag=a) for a in held if a not in present)]
    return copy
