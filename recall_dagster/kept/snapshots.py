"""The last scan's closures and verdicts on disk, so the next scan reads and judges again only what changed.

All are caches: a missing, damaged or outdated file costs one full rescan (or
one full detection), never an error.  They are written by this very code and
read only by it (pickles stamped by :mod:`recall_dagster.pickles`): the
closures' heads, their bodies and datasets in packs (:mod:`recall_dagster.kept.packs`),
the estate's column lineage and the graph's lists, with the source of the
``estate`` modules, which decide what a closure holds; the verdicts of either
pass with that of ``estate`` and ``detect``, which decide what is found.  Apart
from them, the links a rescan follows a change by lie in a SQLite file stamped
the same way, asked by key (:mod:`recall_dagster.kept.links_db`).
"""

from __future__ import annotations

import functools
import hashlib
import operator
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Sequence, cast

from recall_dagster import detect, estate, kept, severity
from recall_dagster.estate import Closure
from recall_dagster.estate.columns import ColumnGraph, column_graph
from recall_dagster.kept import links_db
from recall_dagster.kept.incremental import Rescan, Snapshot
from recall_dagster.kept.links import KeptLinks, Links, LinksMoved
from recall_dagster.estate.listings import KnownListings, Listings
from recall_dagster.kept.closures import Head, Kept, KeptClosure, Ref, head_and_body
from recall_dagster.estate.views import Dataset
from recall_dagster.files import write_atomically
from recall_dagster.graph.port import MetadataGraph
from recall_dagster.kept.packs import Packs
from recall_dagster.pickles import Signer, fingerprint, stamped, unstamped
from recall_dagster.detect.catalogue import Spread
from recall_dagster.kept.verdicts import KeptSpread, Verdicts

# what defines the objects each kind of kept state holds: a change to any of their source refuses what was kept
CLOSURE_SOURCES = (estate, kept)
VERDICT_SOURCES = (estate, detect, severity, kept)
_CLOSURES = fingerprint(*CLOSURE_SOURCES)
_VERDICTS = fingerprint(*VERDICT_SOURCES)


@dataclass(frozen=True)
class _Part:
    """One file's share of a snapshot, with the key and token that bind it to the others."""

    key: str
    token: str
    value: object
    header: tuple = ()  # the verdicts' config and baselines digests


@dataclass(frozen=True)
class _Delta:
    """What changed, per model, since a base file of the same kind: the entries to put in and those to take out,
    and the token (and for verdicts, the digests) the base and this make together."""

    key: str
    base: str  # the token of the base file it applies to; any other base ignores it
    token: str
    changed: dict
    removed: frozenset
    header: tuple = ()  # the verdicts' config and baselines digests


# A rescan writes only what changed since the base (a delta file); the base is written again, whole, once the
# changes pass this share of it (or on a scan that starts afresh).
_REWRITE_SHARE = 8
_REWRITE_AT_LEAST = 256


class SnapshotStore:
    """One snapshot and the verdicts of both passes on it per graph, settings and selection under
    ``<state>/closures``.

    The closures' heads, where their datasets lie and the verdicts of both
    passes are kept per entry, as a base file and a delta of the entries
    changed since: a rescan that read again five models of ten thousand writes
    those five, not the ten thousand.  The links are changed in place, rows by
    key, in their own file, written first: a scan that died after it left links
    at a token no closures are at, which costs one full read.
    Each file is replaced atomically and bound by token to the base it applies
    to, so a scan that died between two writes leaves a base that still stands
    alone (an older snapshot: what changed since is read again) or a delta the
    next base makes void.  Bodies and datasets lie in packs written before the
    heads that name them.
    """

    def __init__(self, state_dir: str | os.PathLike[str]) -> None:
        self.folder = Path(state_dir) / "closures"
        self.signer = Signer(state_dir)
        # (key, kind) -> the base file last read or written in this process: (its token, its entries by model)
        self._bases: dict[tuple[str, str], tuple[str, dict]] = {}
        # (key, kind) -> the entries the delta on that base holds (changed or removed), as last read or written
        self._deltas: dict[tuple[str, str], frozenset[str]] = {}
        self._kept: dict[str, Kept] = {}  # key -> the bodies and datasets of the closures last loaded

    def _path(self, key: str, kind: str, suffix: str = ".pickle") -> Path:
        return self.folder / f"{hashlib.sha256(key.encode()).hexdigest()[:20]}{kind}{suffix}"

    def _read(self, path: Path, stamp: str) -> object | None:
        try:
            blob = path.read_bytes()
        except OSError:
            return None
        return unstamped(blob, stamp, self.signer, f"the kept state {path}")

    def _write(self, path: Path, value: object, stamp: str, what: str) -> None:
        write_atomically(path, stamped(value, stamp, self.signer), what)

    def _load_layered(self, key: str, kind: str, stamp: str) -> tuple[str, dict, tuple] | None:
        """The entries of ``kind`` for ``key``: the base with its delta applied when it applies to it; with the
        token and the header they stand at."""
        base = self._read(self._path(key, kind), stamp)
        if not (isinstance(base, _Part) and base.key == key and isinstance(base.value, dict)):
            self._bases.pop((key, kind), None)  # nothing to lay a delta on: the next save writes a base
            return None
        self._bases[(key, kind)] = (base.token, base.value)
        self._deltas[(key, kind)] = frozenset()
        delta = self._read(self._path(key, kind + ".delta"), stamp)
        if not (isinstance(delta, _Delta) and (delta.key, delta.base) == (key, base.token)):
            return base.token, base.value, base.header
        self._deltas[(key, kind)] = frozenset(delta.changed).union(delta.removed)
        entries = dict(base.value)  # a copy in C, then the few changes
        for urn in delta.removed:
            del entries[urn]
        entries.update(delta.changed)
        return delta.token, entries, delta.header

    def _save_layered(self, key: str, kind: str, stamp: str, token: str, entries: dict, what: str,
                      header: tuple = (), same: Callable[[object, object], bool] | None = None,
                      touched: Iterable[str] | None = None) -> None:
        """Write ``entries`` at ``token`` as a delta on the base this process holds (an entry that is the
        base's own object, or ``same`` as it, is left out), or as a new base.  ``touched``, when the caller
        knows it, names every entry that may differ from the ones last read or written: only those and the
        delta's own are compared (at 10,000 models, comparing them all was a tenth of a rescan)."""
        same = same or _same_parts
        held = self._bases.get((key, kind))
        if held is not None:
            base_token, base = held
            get = base.get  # the very object kept is the common case, told without a call
            delta = self._deltas.get((key, kind))
            some = entries.items() if touched is None or delta is None else (
                (u, entries[u]) for u in delta.union(touched) if u in entries)
            changed = {u: v for u, v in some if (b := get(u, _MISSING)) is not v and not same(b, v)}
            removed = frozenset(base.keys() - entries.keys())
            if len(changed) + len(removed) <= max(_REWRITE_AT_LEAST, len(base) // _REWRITE_SHARE):
                self._write(self._path(key, kind + ".delta"), _Delta(key, base_token, token, changed, removed, header),
                            stamp, what)
                self._deltas[(key, kind)] = frozenset(changed).union(removed)
                return
        self._write(self._path(key, kind), _Part(key, token, entries, header), stamp, what)
        self._bases[(key, kind)] = (token, entries)
        self._deltas[(key, kind)] = frozenset()
        # a delta on the last base names its token: void under this one, and replaced by the next delta

    def load(self, key: str) -> Snapshot | None:
        """The snapshot kept for ``key``; None when there is none this code can trust.  Its closures are
        heads whose bodies and datasets are read from their packs when first read
        (:class:`~recall_dagster.kept.closures.KeptClosure`); its links are read only when asked for (a rescan
        following a change), and only if they were kept with the same closures."""
        kept = self._load_layered(key, "", _CLOSURES)
        tables = self._load_layered(key, ".tables", _CLOSURES)
        if kept is None or tables is None or tables[0] != kept[0]:
            return None
        token, entries, _ = kept
        reader = self._packs(key).open(_named(entries, tables[1]))
        if reader is None:
            return None
        shared = self._kept[key] = Kept(reader, tables[1], self.signer)
        closures = {u: KeptClosure(e, shared) for u, e in entries.items()}
        return Snapshot(key, token, closures, functools.partial(self._links, key, token))

    def _links(self, key: str, token: str) -> KeptLinks | None:
        return links_db.opened(self._links_path(key), key, token, _CLOSURES)

    def _links_path(self, key: str) -> Path:
        return self._path(key, ".links", ".sqlite")

    def save(self, snapshot: Snapshot) -> None:
        try:
            links = snapshot.links()
            if links is not None:
                links_db.keep(self._links_path(snapshot.key), snapshot.key, snapshot.token, _CLOSURES, links)
            if isinstance(links, Links):  # a full read: the links as pickles (before 2026-12) go
                for kind in (".links", ".links.delta", ".readers", ".readers.delta", ".incoming", ".incoming.delta"):
                    self._path(snapshot.key, kind).unlink(missing_ok=True)
        except LinksMoved:
            pass  # another scan rewrote the links this one was laid over: the next scan reads in full
        entries, tables, fresh = self._packed(snapshot)
        self._save_layered(snapshot.key, ".tables", _CLOSURES, snapshot.token, tables, "closure snapshot datasets",
                           same=operator.eq, touched=fresh and fresh[1])
        self._save_layered(snapshot.key, "", _CLOSURES, snapshot.token, entries, "closure snapshot",
                           touched=fresh and fresh[0])
        self._packs(snapshot.key).sweep(_named(entries, tables))

    def _packs(self, key: str) -> Packs:
        return Packs(self.folder, hashlib.sha256(key.encode()).hexdigest()[:20], self.signer)

    def _packed(self, snapshot: Snapshot) -> tuple[
        dict[str, tuple[Head, Ref]], dict[str, Ref], tuple[frozenset[str], frozenset[str]] | None
    ]:
        """The heads and where the bodies are, and where the datasets are, of ``snapshot``'s closures: those
        kept from this store's last load as they were, the others' bodies and datasets in a new pack; and the
        closures and datasets put in it (None when all were).  Once the closures lie in more than
        ``_PACKS_AT_MOST`` packs, all of it goes into one."""
        held = self._kept.get(snapshot.key)
        entries: dict[str, tuple[Head, Ref]] = {}
        heads: dict[str, Head] = {}
        objects: dict[tuple[str, str], object] = {}
        blobs: dict[tuple[str, str], bytes] = {}
        fresh: dict[str, Dataset] = {}
        for urn, closure in snapshot.closures.items():
            if isinstance(closure, KeptClosure) and closure.kept is held:
                entries[urn] = closure.stored
                continue
            whole = closure.whole()  # read now, or kept under another load: its datasets are not in this one
            heads[urn], objects[("body", urn)] = head_and_body(whole)
            fresh.update(whole.datasets)
        objects.update((("table", u), d) for u, d in fresh.items())
        # a dataset no kept closure holds any more stays till a scan keeps none (a full one)
        tables = dict(held.tables) if entries and held is not None else {}
        packed = (frozenset(heads), frozenset(fresh)) if entries else None
        if held is not None and len(_named(entries, tables)) >= _PACKS_AT_MOST:
            packed = None
            blobs.update((("body", u), held.read(ref)) for u, (_, ref) in entries.items())
            blobs.update((("table", u), held.read(ref)) for u, ref in tables.items() if u not in fresh)
            heads.update((u, head) for u, (head, _) in entries.items())
            entries, tables = {}, {}
        refs = self._packs(snapshot.key).write(objects, blobs)
        entries.update((u, (head, refs[("body", u)])) for u, head in heads.items())
        tables.update((u, ref) for (kind, u), ref in refs.items() if kind == "table")
        return entries, tables, packed

    def column_graph(self, rescan: Rescan, closures: Sequence[Closure]) -> Callable[[], ColumnGraph]:
        """The estate's column lineage over ``closures`` (a scan's, or a shard's), for the first detector that
        asks: the graph kept with the snapshot ``rescan`` kept its closures from, while they add what they
        added then (:attr:`~recall_dagster.kept.incremental.Rescan.same_columns`), or built and kept.

        Built, it reads every closure's datasets: at 10,000 models that is decoding every kept closure, for
        one failing test on a model a change reached.  A small mark says which snapshots a kept graph holds
        for; each rescan that keeps the column inputs moves it on, whether or not a detector asked."""
        key = rescan.snapshot
        mark = self._read(self._path(key, ".columns.at"), _CLOSURES)
        built_at: str | None = None  # the snapshot whose kept graph holds for this rescan, when the mark says one
        if isinstance(mark, _Part) and mark.key == key and (  # moved on already by this rescan's first pass
                mark.token == rescan.token or rescan.same_columns and mark.token == rescan.kept_from):
            built_at = cast(str, mark.value)  # as _mark_columns wrote it
            if mark.token != rescan.token:
                self._mark_columns(key, rescan.token, built_at)

        @functools.cache
        def graph() -> ColumnGraph:
            if built_at is not None:
                kept = self._read(self._path(key, ".columns"), _CLOSURES)
                if isinstance(kept, _Part) and kept.key == key and kept.token == built_at:
                    return cast(ColumnGraph, kept.value)  # as this function wrote it
            built = column_graph(closures)
            self._write(self._path(key, ".columns"), _Part(key, rescan.token, built), _CLOSURES, "estate column lineage")
            self._mark_columns(key, rescan.token, rescan.token)
            return built

        return graph

    def _mark_columns(self, key: str, token: str, built: str) -> None:
        """The column graph built at snapshot ``built`` holds for snapshot ``token``."""
        self._write(self._path(key, ".columns.at"), _Part(key, token, built), _CLOSURES, "estate column lineage mark")

    def load_verdicts(self, key: str) -> Verdicts | None:
        """The first pass's verdicts kept for ``key``; None when there are none this code can trust."""
        kept = self._load_layered(key, ".verdicts", _VERDICTS)
        if kept is None:
            return None
        token, entries, header = kept
        if len(header) != 2:
            return None
        found = {u: f for u, (f, _) in entries.items()}
        timed = {u: t for u, (_, t) in entries.items() if t is not None}
        return Verdicts(key, token, header[0], header[1], found, timed)

    def save_verdicts(self, verdicts: Verdicts) -> None:
        entries = {u: (f, verdicts.timed.get(u)) for u, f in verdicts.found.items()}
        self._save_layered(verdicts.key, ".verdicts", _VERDICTS, verdicts.token, entries, "scan verdicts",
                           (verdicts.config, verdicts.baselines), operator.eq)

    def listing(self, key: str, graph: MetadataGraph, *, full: bool = False) -> KnownListings:
        """``graph``, listing from the lists kept for ``key`` once it is asked what changed since them (none
        kept for a ``full`` scan: it lists everything again)."""
        kept = None if full else self._read(self._path(key, ".listed"), _CLOSURES)
        return KnownListings(graph, (kept.token, cast(Listings, kept.value))  # as save_listing wrote it
                             if isinstance(kept, _Part) and kept.key == key else None)

    def save_listing(self, key: str, graph: KnownListings) -> None:
        """Keep the lists ``graph`` gave for the next scan of ``key``, unless they are the ones kept."""
        now = graph.listings()
        if now is not None and now != graph.kept:
            self._write(self._path(key, ".listed"), _Part(key, *now), _CLOSURES, "graph listings")

    def load_spread(self, key: str) -> KeptSpread | None:
        """The second pass kept for ``key``; None when there is none this code can trust."""
        kept = self._load_layered(key, ".spread", _VERDICTS)
        if kept is None or len(kept[2]) != 4:
            return None
        token, findings, (config, at_risk, ranked, exposure) = kept
        return KeptSpread(key, token, config, Spread(at_risk, findings, ranked, exposure))

    def save_spread(self, kept: KeptSpread) -> None:
        """Kept per model like the verdicts: a rescan that judged five models' blast radius again writes
        theirs, with the datasets at risk and who they endanger."""
        spread = kept.spread
        self._save_layered(kept.key, ".spread", _VERDICTS, kept.token, dict(spread.findings), "blast radius verdicts",
                           (kept.config, spread.at_risk, spread.ranked, spread.exposure), operator.eq)


_MISSING = object()
_PACKS_AT_MOST = 16


def _named(entries: dict[str, tuple[Head, Ref]], tables: dict[str, Ref]) -> set[str]:
    """The packs the closures' bodies and datasets lie in."""
    return {ref[0] for _, ref in entries.values()} | {ref[0] for ref in tables.values()}


def _same_parts(before: object, now: object) -> bool:
    """A new tuple of the very objects kept (a closure's head and where its body lies)."""
    return type(before) is tuple and type(now) is tuple and len(before) == len(now) and all(
        b is n for b, n in zip(before, now))
