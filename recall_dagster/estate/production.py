"""Which model version is in production: one rule, for every command and every Dagster asset.

A version is production when the registry marks it so (a production alias or
stage tag, compared without case, as registries and teams spell them
differently) or when a live deployment serves it. Aliases reach the graph from
the registry itself (:mod:`recall_dagster.graph.registry_overlay`), since the
stock mlflow source loses them. A retrain replaces the newest version the
registry marks, else the newest live one, else the newest. A registered model
nothing marks at all is unverified, never "not there".
"""

from __future__ import annotations

from dataclasses import replace
from typing import AbstractSet, Iterable, Mapping, Sequence

from recall_dagster.estate.closure import ModelClosure
from recall_dagster.estate.views import Deployment, Model

# A stage tag the mlflow source writes for a version in no stage: it marks nothing.
NO_STAGE_TAG = "mlflow_none"
STAGE_TAG_PREFIX = "mlflow_"


def _casefold(values: Iterable[str]) -> set[str]:
    return {v.casefold() for v in values}


def registry_marks_production(
    aliases: Iterable[str], tags: Iterable[str], production_aliases: AbstractSet[str], production_tags: AbstractSet[str]
) -> bool:
    """Whether a version's aliases or stage tags mark it production, whatever their case."""
    return bool(_casefold(aliases) & _casefold(production_aliases) or _casefold(tags) & _casefold(production_tags))


def production_alias(aliases: Mapping[str, str], production_aliases: AbstractSet[str]) -> str | None:
    """The version a registry's alias map (alias -> version) marks production, by the same rule."""
    wanted = _casefold(production_aliases)
    return next((str(v) for a, v in sorted(aliases.items()) if a.casefold() in wanted), None)


def served_by(model: Model, deployments: Mapping[str, Deployment]) -> Mapping[str, Deployment]:
    """The deployments listed under the version that really serve it: an endpoint the mlflow or Vertex
    source lists under every version of a model serves only the version it records."""
    return {d: deployments[d] for d in model.deployments if d in deployments and deployments[d].serves(model.version)}


def served_where_recorded(models: Mapping[str, Model], deployments: Mapping[str, Deployment]) -> dict[str, Model]:
    """The versions with every deployment that serves them: one listed under a version of a registered model
    that records serving another of its versions (a rollout stalled on one endpoint, a rollback nobody
    recorded) serves that other version, and is listed under it too, so the version it really serves is
    production and raises ``version_mismatch`` when the registry marks another."""
    by_version = {(g, m.version): urn for urn, m in sorted(models.items()) if m.version and not m.removed
                  for g in m.groups}
    extra: dict[str, dict[str, None]] = {}
    for _, m in sorted(models.items()):
        for d in m.deployments:
            recorded = deployments[d].version if d in deployments else None
            if recorded is None or recorded == m.version:
                continue
            for sibling in dict.fromkeys(by_version.get((g, recorded)) for g in m.groups):
                if sibling is not None and d not in models[sibling].deployments:
                    extra.setdefault(sibling, {})[d] = None
    return {u: replace(m, deployments=(*m.deployments, *extra[u])) if u in extra else m for u, m in models.items()}


def is_production(model: Model, deployments: Mapping[str, Deployment]) -> bool:
    """Production: marked production by the registry, or serving live traffic somewhere."""
    return model.registry_production or any(d.live for d in served_by(model, deployments).values())


def marked_at_all(aliases: Sequence[str], tags: Sequence[str], deployments: Sequence[str]) -> bool:
    """Whether anything says where a version stands (any alias, a stage, a deployment): a registered model
    none of whose versions is marked is one Recall cannot judge, and says so."""
    stages = [t for t in tags if t.startswith(STAGE_TAG_PREFIX) and t != NO_STAGE_TAG]
    return bool(aliases or stages or deployments)


def version_number(closure: ModelClosure) -> tuple[int, str]:
    """Sort key: the registry's version number (non-numeric ones first), then the URN."""
    version = (closure.model.version or "").strip()
    return (int(version) if version.isdigit() else -1, closure.urn)


def replaced_by_retrain(versions: Sequence[ModelClosure]) -> ModelClosure | None:
    """Of one registered model's versions, the one a retrain replaces: the newest the registry marks
    production, else the newest serving live, else the newest."""
    marked = [c for c in versions if c.model.registry_production] or [c for c in versions if c.production]
    return max(marked or versions, key=version_number, default=None)
