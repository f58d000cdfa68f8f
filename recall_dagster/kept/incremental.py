"""Rescan only what changed: the closures no change reached are taken from the last scan.

Resolving closures is most of a scan (reading and decoding every aspect of
every model's upstream world); detection is a small part.  A store that can
say which entities were written since the last scan (DataHub Lite can, GMS
cannot: see :meth:`MetadataGraph.changes_since`) lets a rescan read again only
the models whose closures hold one of them.  Detection still runs on every
closure, because freshness is judged at the scan's own instant.

What a closure depends on is everything its resolution read: the model, its
groups, deployments and owners, its features and their feature tables, its
training runs, and every dataset it reaches with their assertions, owners and
glossary terms.  A change is also followed one edge out, since some links are
stored on the far side: a new assertion names its dataset, a new feature table
names its features.  And a version read again brings every version of its
groups with it, since which of them are in production is read across a group.
A test draws estates and changes with hypothesis and checks that the
incremental closures equal what a full resolve gives.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Literal, Mapping, Sequence

from recall_dagster.contracts import scan as contract
from recall_dagster.estate.closure import Closure, ModelClosure
from recall_dagster.estate.columns import same_columns
from recall_dagster.kept.incoming import KnownIncoming
from recall_dagster.kept.links import KeptLinks, Links, LinksMoved, links_changed, links_of
from recall_dagster.estate.options import ResolveOptions
from recall_dagster.estate.resolve import INCOMING, Resolution, resolve
from recall_dagster.estate.shards import Shard
from recall_dagster.graph.port import Changes, MetadataGraph


# Followed from a changed entity: the resolver's incoming links, and the groups a version belongs to
# (``mlModelProperties.groups``, ``versionProperties.versionSet``).
FOLLOWED = (*INCOMING, "MemberOf", "VersionOf")


@dataclass(frozen=True)
class Snapshot:
    """What one scan resolved, kept so the next one can reuse what no change reached."""

    key: str  # what was resolved: the graph, the resolve settings and the selection
    token: str  # the graph's change token when it was read
    closures: Mapping[str, Closure]  # the selected ones, by model URN
    links: Callable[[], KeptLinks | None] = field(compare=False, repr=False)  # None when they cannot be read back


def _given(links: KeptLinks) -> Callable[[], KeptLinks]:
    return lambda: links


@dataclass(frozen=True)
class Rescan:
    """How a scan came by its closures, for the people and agents reading its result."""

    mode: Literal["full", "incremental"]
    reason: str
    changed: int = 0  # entities written since the last scan, when the graph could say
    reread: int = 0  # models resolved from the graph
    kept: frozenset[str] = field(default=frozenset(), repr=False)  # models whose closures the last scan lent
    snapshot: str = field(default="", repr=False)  # the snapshot key they were read under (one shard's, or none)
    kept_from: str = field(default="", repr=False)  # the token of the snapshot the kept closures come from
    token: str = field(default="", repr=False)  # the token of the snapshot this scan's closures make
    # the closures add to the estate's column lineage what those of the snapshot they were kept from did
    same_columns: bool = field(default=False, repr=False)

    @property
    def reused(self) -> int:
        return len(self.kept)

    def summary(self) -> str:
        if self.mode == "full":
            return f"read in full: {self.reason}"
        return (f"{self.reread:,} model(s) read again, {self.reused:,} closure(s) reused from the last scan "
                f"({self.reason})")

    def contract(self) -> contract.Resolve:
        return contract.Resolve(mode=self.mode, reason=self.reason, changed_entities=self.changed,
                                models_reread=self.reread, models_reused=self.reused)


def combined(rescans: Sequence[Rescan]) -> Rescan | None:
    """How the shards of one scan came by their closures, told as one."""
    if not rescans:
        return None
    if len(rescans) == 1:
        return rescans[0]
    full = [r for r in rescans if r.mode == "full"]
    reasons = list(dict.fromkeys(r.reason for r in (full or rescans)))
    return Rescan(
        "full" if full else "incremental",
        f"{len(full) or len(rescans)} of {len(rescans)} shards: {'; '.join(reasons)}",
        changed=max(r.changed for r in rescans),
        reread=sum(r.reread for r in rescans),
        kept=frozenset().union(*(r.kept for r in rescans)),
    )


def snapshot_key(location: str, options: ResolveOptions, include_all: bool, shard: Shard | None = None) -> str:
    """The same graph, read with the same settings for the same selection: only then is a snapshot reusable."""
    settings = {
        name: sorted(value) if isinstance(value, frozenset) else value for name, value in vars(options).items()
    }
    return repr((location, sorted(settings.items()), include_all, shard.key if shard else None))


def _by_urn(resolution: Resolution) -> dict[str, ModelClosure]:
    return {c.urn: c for c in resolution.closures}


def _reached(graph: MetadataGraph, changed: frozenset[str]) -> set[str]:
    """The changed entities, and what they link to on the links a closure holds from the far side (an
    assertion's dataset, a feature table's features) or a version's standing depends on (its groups)."""
    reached = set(changed)
    for relationship in FOLLOWED:
        for targets in graph.related(sorted(changed), relationship, "outgoing").values():
            reached.update(targets)
    return reached


def _affected(previous: KeptLinks, listed: set[str], reached: set[str]) -> set[str]:
    """Listed models a change reaches, new models, and every version that shares a group with one read again,
    group after group: the versions a group marks production are read across the group, so a version that
    joins, leaves or changes its standing changes what the others see, and a version read again sees the
    production versions of all its groups only when all their members are read with it."""
    affected = listed - previous.models()
    affected.update(m for readers in previous.readers(reached).values() for m in readers if m in listed)
    pending = {g for chosen in previous.chosen(affected).values() for g in chosen[0]}
    done: set[str] = set()
    while pending:
        done.update(pending)
        joined = {u for members in previous.members(pending).values() for u in members
                  if u in listed and u not in affected}
        affected.update(joined)
        pending = {g for chosen in previous.chosen(joined).values() for g in chosen[0]} - done
    return affected


def _full_because(previous: Snapshot | None, key: str, changes: Changes, full: bool) -> str | None:
    if full:
        return "a full rescan was asked for"
    if previous is None:
        return "no earlier scan of this graph to start from"
    if previous.key != key:
        return "the resolve settings or the selection changed since the last scan"
    if changes.urns is None:
        return "the graph cannot say what changed since the last scan"
    return None


def resolve_incremental(
    graph: MetadataGraph,
    options: ResolveOptions,
    *,
    include_all: bool,
    previous: Snapshot | None,
    full: bool = False,
    shard: Shard | None = None,
) -> tuple[list[Closure], Snapshot, Rescan]:
    """The closures :func:`~recall_dagster.estate.resolve.resolve_closures` gives (of the models ``shard``
    holds), reading again only the models a change since ``previous`` reaches; the snapshot to keep for the
    next scan; how it went."""
    key = snapshot_key(graph.location, options, include_all, shard)
    changes = graph.changes_since(previous.token if previous is not None and previous.key == key else None)
    because = _full_because(previous, key, changes, full)
    if because is None and previous is not None and changes.token == previous.token:
        return _in_order(previous), previous, Rescan(
            "incremental", "nothing changed since the last scan", kept=frozenset(previous.closures),
            snapshot=key, kept_from=previous.token, token=previous.token, same_columns=True)
    links = previous.links() if because is None and previous is not None else None
    if links is not None and previous is not None and changes.urns is not None:
        try:
            return _incremental(graph, options, include_all, shard, previous, links, changes)
        except LinksMoved:
            because = "another scan rewrote the last scan's links while this one read them"
    asking = KnownIncoming(graph, Links({}, {}))
    resolution = resolve(asking, options, include_all=include_all, shard=shard)
    read = _by_urn(resolution)
    snapshot = Snapshot(key, changes.token, read, _given(links_of(read, resolution.models, asking.changes())))
    reason = because or "the last scan's snapshot is incomplete"
    rescan = Rescan("full", reason, reread=len(resolution.models), snapshot=key, token=snapshot.token)
    return _in_order(snapshot), snapshot, rescan


def _incremental(graph: MetadataGraph, options: ResolveOptions, include_all: bool,
                 shard: Shard | None, previous: Snapshot, links: KeptLinks, changes: Changes
                 ) -> tuple[list[Closure], Snapshot, Rescan]:
    """Read again the models a change since ``previous`` reaches, following it by ``links``."""
    assert changes.urns is not None
    listed = set(graph.list_urns("mlModel"))
    affected = _affected(links, listed, _reached(graph, changes.urns)) if changes.urns else set()
    kept = listed - affected
    asking = KnownIncoming(graph, links, changes.urns)
    fresh = resolve(asking, options, include_all=include_all,
                    candidates=sorted(affected), shard=shard) if affected else Resolution([], {})
    closures = _by_urn(fresh)
    snapshot = Snapshot(
        previous.key, changes.token, {**{u: c for u, c in previous.closures.items() if u in kept}, **closures},
        _given(links_changed(links, previous.closures, kept, closures, fresh.models, asking.changes())),
    )
    reused = frozenset(u for u in previous.closures if u in kept)
    changed = len(changes.urns)
    same = set(snapshot.closures) == set(previous.closures) and all(
        same_columns(previous.closures[u], c) for u, c in closures.items())
    rescan = Rescan("incremental", f"{changed:,} entit{'y' if changed == 1 else 'ies'} changed since the last scan",
                    changed=changed, reread=len(affected), kept=reused, snapshot=previous.key,
                    kept_from=previous.token, token=snapshot.token, same_columns=same)
    return _in_order(snapshot), snapshot, rescan


def _in_order(snapshot: Snapshot) -> list[Closure]:
    """The snapshot's closures as a resolve gives them, by model URN: kept as they were read, since the scan
    judges them at its own instant."""
    return [snapshot.closures[u] for u in sorted(snapshot.closures)]
