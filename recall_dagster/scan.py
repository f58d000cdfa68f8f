"""The scan's one pipeline: read the closures → detect (the first pass) → measure (replay the findings on their
models) → spread (the blast radius, from the measured severities) → score; the write-back takes the result.

Every entry point runs the stages of :class:`Pipeline` and none assembles them itself: ``recall scan``, the MCP
server, rollback's rescan and a model's verdict check run them all (:func:`run_scan`), each Dagster asset one
stage or a span of them, and a shard of the estate the first two, gathered before the rest.  Configuration is
read in :mod:`recall_dagster.config`, baselines kept in :mod:`recall_dagster.kept.baselines`, results shaped in
:mod:`recall_dagster.results`.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator, Mapping, Sequence, cast

from recall_dagster.acks.model import Acknowledgement, still_open
from recall_dagster.acks.trust import AckBook
from recall_dagster.kept.baselines import Baselines, StateStore
from recall_dagster.collector import while_paused
from recall_dagster.detect import Detection, ScanConfig
from recall_dagster.detect.state import SchemaBaseline
from recall_dagster.detect.catalogue import (
    Found, Judged, Judgement, first_pass, judge, kept_verdicts, keepable, second_pass,
)
from recall_dagster.errors import ConfigError, ModelNotFound, NoProductionVersion
from recall_dagster.estate import Closure, ModelClosure
from recall_dagster.estate.columns import ColumnGraph
from recall_dagster.kept.incremental import Rescan, combined, resolve_incremental, snapshot_key
from recall_dagster.estate.naming import model_name
from recall_dagster.estate.production import version_number
from recall_dagster.estate.resolve import resolve, resolve_closures
from recall_dagster.estate.select import select
from recall_dagster.estate.shards import Shard
from recall_dagster.estate.unlinked import Outside, asserted_in, failing_outside
from recall_dagster.estate.unserved import Unserved, without_production
from recall_dagster.graph.port import MetadataGraph
from recall_dagster.instants import iso_instant
from recall_dagster.results import ScanResult, score_models
from recall_dagster.kept.snapshots import SnapshotStore
from recall_dagster.kept.verdicts import (
    KeptSpread,
    Verdicts,
    baselines_digest,
    config_digest,
    reusable,
    partly_reusable_spread,
    reusable_spread,
)

# The measure stage: the first pass's findings replayed on their models (impact.measured), before the blast
# radius spreads them; the retrain gate's measured_impact check reads what it says.
Measure = Callable[[MetadataGraph, Sequence[Closure], Found], Found]


def _named(closure: Closure, urn: str, name: str) -> bool:
    """Whether ``name`` (any name of the table ``urn`` is, or ``*`` for all) names it."""
    return name == "*" or closure.whole().named(urn, name)


def record_baselines(
    closures: Sequence[Closure], baselines: Baselines, *, accept: Sequence[str] = ()
) -> Baselines:
    """Record the schema of every dataset seen for the first time, and of those ``accept`` names.

    A baseline is kept until it is deliberately replaced, so drift stays
    reported on every scan until someone accepts that table's schema
    (``recall scan --accept-schema TABLE``; ``*`` accepts every one). A name
    that matches no scanned table is a :class:`ConfigError`, not a silent no-op.
    """
    updated = dict(baselines)  # a baseline is replaced whole, never edited: the copy may share them
    matched: set[str] = set()
    for closure in closures:
        for urn in closure.dataset_urns:
            if not accept and urn in updated:
                continue  # the common case, kept cheap (a kept closure's body is not read): a baseline kept
            named = [n for n in accept if _named(closure, urn, n)]
            matched.update(named)
            dataset = closure.dataset(urn)
            if dataset.fields is not None and (named or urn not in updated):
                updated[urn] = {f.path: f.type for f in dataset.fields}
    unknown = [n for n in accept if n not in matched]
    if unknown:
        raise ConfigError(f"--accept-schema {', '.join(unknown)} names no table in the scanned models' closures")
    return updated


def find_and_record(
    closures: Sequence[Closure], config: ScanConfig, store: StateStore, *, at_ms: int,
    accept_schema: Sequence[str] = (),
) -> Found:
    """The detectors that need one closure each, judging at ``at_ms`` against the stored baselines; then the
    schemas first seen now (and the accepted ones) are recorded."""
    return _find_and_record(closures, config, store, store.load_baselines(), accept_schema, None, at_ms,
                            keep=False)[0].found


def _find_and_record(
    closures: Sequence[Closure], config: ScanConfig, store: StateStore, baselines: Baselines,
    accept_schema: Sequence[str], judged: Judged | None, at_ms: int, keep: bool = True,
    columns: Callable[[], ColumnGraph] | None = None,
) -> tuple[Judgement, Baselines]:
    """:func:`find_and_record` on loaded ``baselines``, keeping what ``judged`` holds; and the baselines it
    recorded."""
    judgement = judge(closures, config, baselines, judged, keep, columns, at_ms=at_ms)
    updated = record_baselines(closures, baselines, accept=accept_schema)
    recorded = {u: cols for u, cols in updated.items() if baselines.get(u) != cols}
    if recorded:
        store.save_baselines(recorded)
    return judgement, recorded


def finish_detection(
    closures: Sequence[Closure], found: Found, config: ScanConfig, *,
    acks: Sequence[Acknowledgement] = (), at_ms: int, snapshots: SnapshotStore | None = None,
    rescan: Rescan | None = None,
) -> Detection:
    """The blast radius over what the first pass ``found``; a finding ``acks`` cover at ``at_ms`` puts no
    dataset at risk.  With ``snapshots``, the last scan's second pass is kept when it ran over these very
    closures (``rescan``) under the same config and the same datasets are at risk, and saved when it is new."""
    key = rescan.snapshot if rescan is not None else ""
    if snapshots is None or rescan is None or not key:
        return second_pass(closures, found, config, still_open(acks, at_ms), at_ms=at_ms)
    digest = config_digest(config)
    kept = snapshots.load_spread(key)
    earlier = reusable_spread(kept, rescan, digest, closures)
    partly = partly_reusable_spread(kept, rescan, digest) if earlier is None else None
    detection = second_pass(closures, found, config, still_open(acks, at_ms), earlier, partly,
                            columns=snapshots.column_graph(rescan, closures), at_ms=at_ms)
    moved = kept is not None and kept.token != rescan.token  # the same closures, under the graph's new token
    if detection.spread is not None and (detection.spread is not earlier or moved):
        snapshots.save_spread(KeptSpread(key, rescan.token, digest, detection.spread))
    return detection


def select_closures(
    graph: MetadataGraph,
    config: ScanConfig,
    *,
    include_all: bool = False,
    models: Sequence[str] = (),
) -> list[ModelClosure]:
    """Closures of the production models (every model with ``include_all``), or of those ``models`` names.

    A selector is a registered model's name (its production versions, every
    version with ``include_all``), ``name/version``, or a version's URN (exactly
    that version, production or not). One the graph does not know is a
    :class:`ModelNotFound` naming it; the graph answers, no URN is built.
    """
    if not models:
        return resolve_closures(graph, config.resolve, include_all=include_all)
    by_urn = {m: model_name(m).version_urn is not None for m in models}
    urns = [m for m, is_urn in by_urn.items() if is_urn]
    named = [m for m, is_urn in by_urn.items() if not is_urn]
    picked = resolve_closures(graph, config.resolve, model_urns=urns) if urns else []
    unknown = [c.urn for c in picked if c.model.missing]
    unmarked: list[ModelClosure] = []
    if named:
        pool = resolve_closures(graph, config.resolve, include_all=True)
        for selector in named:
            registered = select(pool, [selector])
            found = select(pool, versions=[selector]) or [c for c in registered if include_all or c.production]
            if found:
                picked += found
            elif registered:
                unmarked += registered
            else:
                unknown.append(selector)
    if unknown:
        raise ModelNotFound(f"no model {', '.join(unknown)} in {graph.location}" + (
            "" if include_all else " (a registered name means its production versions; --all for every version)"
        ))
    if unmarked:
        raise NoProductionVersion(_unmarked_message(unmarked, config))
    return sorted({c.urn: c for c in picked}.values(), key=lambda c: c.urn)


def _unmarked_message(versions: Sequence[ModelClosure], config: ScanConfig) -> str:
    """Which registered models have versions but none marked production, and what would mark one."""
    names: dict[str, list[str]] = {}
    for c in sorted(versions, key=version_number):
        names.setdefault(c.registered_name, []).append(c.model.version or c.model.name)
    listed = "; ".join(f"{name} (version {', '.join(v)})" for name, v in names.items())
    first = next(iter(names))
    return (
        f"no version of {listed} is marked production: {production_markers(config)}. "
        f"Name a version ({first}/{names[first][-1]}) or give --all"
    )


def production_markers(config: ScanConfig) -> str:
    """What marks a version production, as a person configures it (recall.yaml ``production:``)."""
    options = config.resolve
    return (f"no alias {', '.join(sorted(options.production_aliases))} in the registry or the graph, no stage tag "
            f"{', '.join(sorted(options.production_tags))}, no live deployment")


def scan_closures(
    graph: MetadataGraph,
    config: ScanConfig,
    *,
    include_all: bool = False,
    models: Sequence[str] = (),
    snapshots: SnapshotStore | None = None,
    full: bool = False,
    shard: Shard | None = None,
) -> tuple[Sequence[Closure], Rescan | None]:
    """:func:`select_closures`, or those of the models ``shard`` holds; with ``snapshots``, a scan of the
    whole estate (or of a shard) reads again only the models a change since the last one reaches (``full``
    reads everything and starts a new snapshot)."""
    if models:
        if shard is not None:
            raise ConfigError("a shard is a share of the whole estate: scan chosen models without one")
        return select_closures(graph, config, include_all=include_all, models=models), None
    if snapshots is None:
        return resolve(graph, config.resolve, include_all=include_all, shard=shard).closures, None
    previous = snapshots.load(snapshot_key(graph.location, config.resolve, include_all, shard))
    closures, snapshot, rescan = resolve_incremental(
        graph, config.resolve, include_all=include_all, previous=previous, full=full, shard=shard,
    )
    if snapshot is not previous:
        snapshots.save(snapshot)
    return closures, rescan


@dataclass(frozen=True)
class ShardScan:
    """One shard's part of a scan: its closures and what the detectors that need one closure found in them.

    The blast radius needs the whole estate, so it waits for :meth:`Pipeline.gathered`.
    """

    shard: Shard | None  # None: the whole estate in one part
    scanned_at_ms: int  # the instant its freshness was judged at: every part of one scan shares it
    closures: tuple[Closure, ...]
    found: Found
    rescan: Rescan | None = None


def find_again(
    closures: Sequence[Closure], config: ScanConfig, store: StateStore, *, at_ms: int,
    snapshots: SnapshotStore | None, rescan: Rescan | None, accept_schema: Sequence[str] = (),
) -> Found:
    """:func:`find_and_record`, keeping the last scan's verdicts (:mod:`recall_dagster.kept.verdicts`) on the
    closures ``rescan`` took from its snapshot; without a snapshot, every closure is judged."""
    key = rescan.snapshot if rescan is not None else ""
    if snapshots is None or rescan is None or not key:
        return find_and_record(closures, config, store, at_ms=at_ms, accept_schema=accept_schema)
    digest, baselines = config_digest(config), store.load_baselines()
    judged_under = baselines_digest(baselines)
    earlier = snapshots.load_verdicts(key)
    judged = reusable(earlier, rescan, digest, judged_under)
    columns = snapshots.column_graph(rescan, closures)
    judgement, recorded = _find_and_record(closures, config, store, baselines, accept_schema, judged, at_ms,
                                           columns=columns)
    found = judgement.found
    # Baselines first recorded now are the schemas these closures hold, so every verdict holds under them too
    # (as the store gives them back, which is how the next scan will see them); an accepted schema replaces a
    # baseline, and the verdicts on that table hold only under the old one.
    holds_under = baselines_digest(store.load_baselines()) if recorded and not accept_schema else judged_under
    unchanged = (
        earlier is not None and judged is not None and (earlier.token, earlier.baselines) == (rescan.token, holds_under)
        and len(judged.found) == len(closures) and judged.detectors == keepable(baselines_unchanged=True)
        and judgement.judged_again == 0
    )
    if not unchanged:
        snapshots.save_verdicts(Verdicts(key, rescan.token, digest, holds_under, kept_verdicts(found),
                                         judgement.timed))
    return found


def _whole(parts: Sequence[ShardScan]) -> None:
    """Refuse shards that do not add up to one scan of the estate: one missing would stand its models down,
    and parts judged at different instants would disagree on what is stale."""
    shards = [p.shard for p in parts]
    if not parts:
        raise ConfigError("no shard to merge: scan the estate's shards first")
    if shards != [None]:
        if None in shards or len({s.count for s in shards if s}) != 1:
            raise ConfigError("merge the shards of one cut of the estate: every part a shard of the same count")
        count = cast(Shard, shards[0]).count  # None is not among them (checked above)
        given = sorted(s.index for s in shards if s)
        if given != list(range(count)):
            missing = sorted(set(range(count)) - set(given))
            twice = sorted({i for i in given if given.count(i) > 1})
            raise ConfigError(
                f"the shards do not add up to the estate: {count} expected"
                + (f"; missing {', '.join(Shard(i, count).key for i in missing)}" if missing else "")
                + (f"; given twice {', '.join(Shard(i, count).key for i in twice)}" if twice else "")
            )
    if len({p.scanned_at_ms for p in parts}) > 1:
        instants = ", ".join(f"{p.shard.key if p.shard else 'the estate'} at {iso_instant(p.scanned_at_ms)}"
                             for p in parts)
        raise ConfigError(f"the shards were scanned at different instants ({instants}): scan them all at one "
                          "instant (one backfill of every shard, or one scanned_at)")


def gather(parts: Sequence[ShardScan]) -> ShardScan:
    """The shards of one scan as one part holding the whole estate, once they are found to add up."""
    _whole(parts)
    return ShardScan(
        shard=None,
        scanned_at_ms=parts[0].scanned_at_ms,
        closures=tuple(sorted((c for p in parts for c in p.closures), key=lambda c: c.urn)),
        found={urn: fs for p in parts for urn, fs in p.found.items()},
        rescan=combined([p.rescan for p in parts if p.rescan is not None]),
    )


@contextmanager
def kept_lists(
    graph: MetadataGraph, config: ScanConfig, snapshots: SnapshotStore | None, *, include_all: bool,
    models: Sequence[str] = (), full: bool = False,
) -> Iterator[MetadataGraph]:
    """``graph``, listing models, groups and assertions from the last scan's lists and what changed since, when
    a scan of the whole estate keeps a snapshot (:class:`~recall_dagster.estate.listings.KnownListings`); the
    lists it gave are kept when the read ends without an error."""
    if snapshots is None or models:
        yield graph
        return
    key = snapshot_key(graph.location, config.resolve, include_all)
    listing = snapshots.listing(key, graph, full=full)
    yield listing
    snapshots.save_listing(key, listing)


def left_out(
    graph: MetadataGraph, closures: Sequence[Closure], config: ScanConfig, at_ms: int,
) -> tuple[Unserved, tuple[Outside, ...]]:
    """What a scan of the whole estate says beyond its closures: the registered models it judged no version
    of, and the assertions failing at ``at_ms`` on data none of its models reads."""
    return without_production(graph, closures), failing_outside(
        graph, asserted_in(closures), config.failing, at_ms, config.resolve.history_limit)


@dataclass(frozen=True)
class Read:
    """What the read stage hands on: the closures, where and when they were read, and what a scan of the whole
    estate says beyond them."""

    scanned_at_ms: int  # the instant freshness is judged at, and acknowledgements are in force at or not
    graph: str
    closures: tuple[Closure, ...]
    whole_estate: bool  # no model was picked out: what the scan did not see, it may stand down
    acks: AckBook = AckBook()  # in force when the closures were read: findings and scores honour them
    rescan: Rescan | None = None  # how they were read: in full, or only what changed since the last scan
    found: Found | None = None  # what the shards' detectors found, when shards read the closures
    without_production: Unserved = Unserved()  # registered models a whole-estate scan found nothing in production of
    unlinked: tuple[Outside, ...] = ()  # failing assertions on data none of its models reads


@dataclass(frozen=True)
class Pipeline:
    """The scan's stages, in their one order: read the closures, detect (the first pass), measure (replay the
    findings on their models), spread (the blast radius, from the measured severities), score.

    Every entry point runs these: ``recall scan`` and the MCP server all of them (:func:`run_scan`), rollback and a
    model's verdict check without measuring, each Dagster asset one stage or a span, a shard the first two
    (:meth:`shard`). What is kept between scans (baselines in ``store``; closures, verdicts and the blast
    radius in ``snapshots``) is kept by the stages themselves, so every entry point reuses it alike.
    ``measure`` is the replay (:func:`recall_dagster.impact.measured.finding_measure`); None measures nothing.
    The write-back takes the scored result where an entry point sends it.
    """

    config: ScanConfig
    store: StateStore
    snapshots: SnapshotStore | None = None
    measure: Measure | None = None

    @while_paused
    def read(
        self, graph: MetadataGraph, *, scanned_at_ms: int, include_all: bool = False, models: Sequence[str] = (),
        full: bool = False, acks: AckBook = AckBook(),
    ) -> Read:
        """The closures :func:`scan_closures` gives, and, of the whole estate, what it leaves out
        (:func:`left_out`); the lists a kept snapshot gave are kept when the read ends without an error."""
        with kept_lists(graph, self.config, self.snapshots, include_all=include_all, models=models,
                        full=full) as reading:
            closures, rescan = scan_closures(reading, self.config, include_all=include_all, models=models,
                                             snapshots=self.snapshots, full=full)
            unserved, unlinked = (Unserved(), ()) if models else left_out(reading, closures, self.config,
                                                                          scanned_at_ms)
        return Read(scanned_at_ms, graph.location, tuple(closures), whole_estate=not models, acks=acks,
                    rescan=rescan, without_production=unserved, unlinked=unlinked)

    @while_paused
    def shard(
        self, graph: MetadataGraph, *, scanned_at_ms: int, shard: Shard, include_all: bool = False,
        full: bool = False,
    ) -> ShardScan:
        """One shard's part of a scan: its closures read and detected; the blast radius waits for
        :meth:`gathered`."""
        closures, rescan = scan_closures(graph, self.config, include_all=include_all, snapshots=self.snapshots,
                                         full=full, shard=shard)
        found = find_again(closures, self.config, self.store, at_ms=scanned_at_ms, snapshots=self.snapshots,
                           rescan=rescan)
        return ShardScan(shard, scanned_at_ms, tuple(closures), found, rescan)

    @while_paused
    def gathered(self, graph: MetadataGraph, parts: Sequence[ShardScan], *, acks: AckBook = AckBook()) -> Read:
        """The shards of one scan read as one of the whole estate (:func:`gather`), their first pass done."""
        whole = gather(parts)
        unserved, unlinked = left_out(graph, whole.closures, self.config, whole.scanned_at_ms)
        return Read(whole.scanned_at_ms, graph.location, whole.closures, whole_estate=True, acks=acks,
                    rescan=whole.rescan, found=whole.found, without_production=unserved, unlinked=unlinked)

    @while_paused
    def detect(self, read: Read, *, accept_schema: Sequence[str] = ()) -> Found:
        """The first pass: the detectors that need one closure each (what shards found, when they read it);
        schemas first seen now, and those ``accept_schema`` names, become baselines."""
        if read.found is None:
            return find_again(read.closures, self.config, self.store, at_ms=read.scanned_at_ms,
                              snapshots=self.snapshots, rescan=read.rescan, accept_schema=accept_schema)
        if accept_schema:
            raise ConfigError("accept a table's schema in a scan of the whole estate read in one part: a shard "
                              "may not hold the table")
        return read.found

    def measured(self, graph: MetadataGraph, read: Read, found: Found) -> Found:
        """The first pass with each replayable finding measured on its model; ``found`` itself without
        ``measure`` or when nothing was replayed."""
        return found if self.measure is None else self.measure(graph, read.closures, found)

    @while_paused
    def spread(self, read: Read, found: Found) -> Detection:
        """The blast radius over what the first pass ``found`` (measured), as :func:`finish_detection` keeps it."""
        return finish_detection(read.closures, found, self.config, acks=read.acks.honoured, at_ms=read.scanned_at_ms,
                                snapshots=self.snapshots, rescan=read.rescan)

    @while_paused
    def score(self, read: Read, detection: Detection) -> ScanResult:
        """Every model scored, worst first, leaving out what an acknowledgement in force covers."""
        at, acks = read.scanned_at_ms, read.acks
        return ScanResult(
            scanned_at_ms=at,
            graph=read.graph,
            models=score_models(read.closures, detection, self.config, acks=acks.honoured, at_ms=at),
            blast_radius=detection.blast_radius,
            config=self.config,
            acks=acks.honoured,
            ignored_acks=acks.ignored,
            rescan=read.rescan,
            without_production=read.without_production,
            unlinked=read.unlinked,
        )

    def finish(self, graph: MetadataGraph, read: Read, *, accept_schema: Sequence[str] = ()) -> ScanResult:
        """Every stage after the read."""
        found = self.measured(graph, read, self.detect(read, accept_schema=accept_schema))
        return self.score(read, self.spread(read, found))

    def scan(
        self, graph: MetadataGraph, *, scanned_at_ms: int, include_all: bool = False, models: Sequence[str] = (),
        accept_schema: Sequence[str] = (), acks: AckBook = AckBook(), full: bool = False,
    ) -> ScanResult:
        """Every stage, over production models, every model with ``include_all``, or the ones ``models`` selects
        (:func:`select_closures`).

        ``scanned_at_ms`` is the instant freshness is judged at (now, or ``--as-of``), and the one ``acks`` are
        in force at or not; those ``acks`` set aside are listed in the result. New schema baselines are saved
        to the store after detection, so the scan that first sees a dataset reports no drift for it. With
        snapshots, see :func:`scan_closures`.
        """
        read = self.read(graph, scanned_at_ms=scanned_at_ms, include_all=include_all, models=models, full=full,
                         acks=acks)
        return self.finish(graph, read, accept_schema=accept_schema)


def run_scan(
    graph: MetadataGraph,
    config: ScanConfig,
    store: StateStore,
    *,
    scanned_at_ms: int,
    include_all: bool = False,
    models: Sequence[str] = (),
    accept_schema: Sequence[str] = (),
    acks: AckBook = AckBook(),
    snapshots: SnapshotStore | None = None,
    full: bool = False,
    measure: Measure | None = None,
) -> ScanResult:
    """:meth:`Pipeline.scan` of a pipeline built from these parts: for a caller that is not scanning a Recall
    home (:func:`recall_dagster.home_scan.home_pipeline` builds that one)."""
    return Pipeline(config, store, snapshots, measure).scan(
        graph, scanned_at_ms=scanned_at_ms, include_all=include_all, models=models, accept_schema=accept_schema,
        acks=acks, full=full)


def judged(
    closures: Sequence[ModelClosure], config: ScanConfig, baselines: Mapping[str, SchemaBaseline], *,
    at_ms: int, measure: Callable[[Sequence[ModelClosure], Found], Found] | None = None,
    acks: Sequence[Acknowledgement] = (), among: Sequence[ModelClosure] | None = None, columns: Callable[[], ColumnGraph] | None = None,
) -> Detection:
    """The detect, measure and spread stages over ``closures`` judged at ``at_ms`` apart from a scan (the version a retrain
    would replace, the findings an acknowledgement names, a regressed candidate): ``baselines`` read and never
    recorded, nothing kept for the next scan; ``measure`` is the replay bound to the graph it reads. ``among``
    is the estate they belong to when it was read whole (its failing tests reach them:
    :func:`~recall_dagster.detect.catalogue.second_pass`)."""
    found = first_pass(closures, config, baselines, at_ms=at_ms)
    if measure is not None:
        found = measure(closures, found)
    return second_pass(closures, found, config, still_open(acks, at_ms), among=among, columns=columns, at_ms=at_ms)
