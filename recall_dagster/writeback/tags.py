"""Tier tags on models (``recall:critical``, ``recall:at-risk``): added and removed as tiers change.

Every tag whose name starts with ``recall:`` is Recall's; the rest of a model's
``globalTags`` is kept as it is (read, merged, written whole).  Models that left
the scan but still carry a Recall tag (found through the tag's incoming
``TaggedWith`` edges) lose it: Recall only vouches for what it scanned.
"""

from __future__ import annotations

from datahub.metadata.schema_classes import GlobalTagsClass, TagAssociationClass, TagPropertiesClass

from recall_dagster.estate import display_name
from recall_dagster.writeback.config import WritebackConfig
from recall_dagster.writeback.context import PlanContext
from recall_dagster.writeback.keys import is_recall_tag, tag_urn
from recall_dagster.writeback.writes import Write

_COLOURS = ("#d9363e", "#f5a623", "#4a90e2")  # by tier order: most serious first


def recall_tag_urns(config: WritebackConfig) -> list[str]:
    return sorted({tag_urn(name) for name in config.tags.values()})


def tag_vocabulary(config: WritebackConfig, tiers: tuple[str, ...]) -> list[Write]:
    """The tags themselves, named and coloured so the UI shows what they mean."""
    writes = []
    for tier, name in sorted(config.tags.items(), key=lambda item: tiers.index(item[0])):
        properties = TagPropertiesClass(
            name=name,
            description=f"Recall scored this model {tier}: see its pre-mortem and incidents.",
            colorHex=_COLOURS[min(tiers.index(tier), len(_COLOURS) - 1)],
        )
        writes.append(
            Write.of("tag", tag_urn(name), properties, f"define tag {name}")
        )
    return writes


def plan_tags(ctx: PlanContext) -> list[Write]:
    tiers = ctx.result.config.scoring.tier_names()
    writes = tag_vocabulary(ctx.config, tiers)
    wanted = {m.closure.urn: ctx.config.tags.get(m.score.tier) for m in ctx.result.models}
    for urn in ctx.state.tagged_models:
        wanted.setdefault(urn, None)
    for urn, name in sorted(wanted.items()):
        current = ctx.state.aspect(urn, GlobalTagsClass)
        kept = [t for t in (current.tags if current else []) if not is_recall_tag(t.tag)]
        ours = [TagAssociationClass(tag=tag_urn(name))] if name else []
        if current is None and not ours:
            continue  # nothing to remove, nothing to add: no empty aspect for the sake of it
        why = f"{display_name(urn)}: " + (f"tag {name}" if name else "no Recall tag")
        writes.append(
            Write.of("tag", urn, GlobalTagsClass(tags=kept + ours), why)
        )
    return writes
