"""The one interface through which Recall reads and writes metadata.

Everything above ``graph/`` is written against :class:`MetadataGraph` and never
learns whether it talks to a DataHub Lite file or a DataHub GMS server.  Reads
are batched because closures are resolved hop by hop: a round of requests per
hop, each a few batched calls per aspect group (over GMS, aspects two hundred URNs
a call; histories and incoming edges of many URNs by scrolling a thousand events
or edges a page), so requests grow with closure depth and pages, not entities.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any, Iterable, Iterator, Literal, Mapping, Protocol, Sequence, TypeVar, cast, runtime_checkable
from urllib.parse import urlsplit, urlunsplit

from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata.schema_classes import ASPECT_NAME_MAP, KEY_ASPECT_NAMES, _Aspect

from recall_dagster.errors import GraphError

Direction = Literal["outgoing", "incoming"]
_T = TypeVar("_T")
AspectT = TypeVar("AspectT", bound=_Aspect)  # one aspect class, as asked for and as answered

# urn -> aspect name (e.g. "mlModelProperties") -> typed SDK aspect
AspectMap = dict[str, dict[str, _Aspect]]


def aspect_of(aspects: Mapping[str, _Aspect], aspect_class: type[AspectT]) -> AspectT | None:
    """``aspects.get(aspect_class.ASPECT_NAME)`` typed as what it is: one entity's aspects (an
    :data:`AspectMap` entry) are keyed by their class's ``ASPECT_NAME``, so the one under that name is of it."""
    return cast("AspectT | None", aspects.get(aspect_class.ASPECT_NAME))


@dataclass
class WriteReport:
    """What happened to each proposal of one write call; a failed write never hides."""

    written: int = 0
    failures: list[tuple[str, str, str]] = field(default_factory=list)  # (urn, aspect, reason)

    @property
    def ok(self) -> bool:
        return not self.failures

    def raise_if_failed(self, what: str) -> None:
        """For callers whose writes must all land: one precise error naming the first failure."""
        if self.failures:
            urn, aspect, reason = self.failures[0]
            raise GraphError(f"{len(self.failures)} {what} write(s) failed; first: {aspect} on {urn}: {reason}")


@dataclass(frozen=True)
class Changes:
    """What changed in a store since a token it gave earlier.

    ``token`` names the store's state now, to pass to the next call.
    ``urns`` are the entities with an aspect written since the token (an
    aspect rewritten unchanged does not count); None when the store cannot
    tell (no earlier token, a store rewritten rather than appended to, or a
    store with no change feed), and then a caller must read everything.
    ``listed`` are those of ``urns`` :meth:`MetadataGraph.list_urns` lists
    now, so a caller that kept the lists it read at the token can bring them
    up to date without listing again.
    """

    token: str
    urns: frozenset[str] | None
    listed: frozenset[str] = frozenset()


@runtime_checkable
class MetadataGraph(Protocol):
    """Port over a DataHub metadata store (embedded Lite file or GMS)."""

    @property
    def location(self) -> str:
        """What was opened, as a person would name it (a file path or a URL)."""

    def get_aspects(
        self, urns: Sequence[str], aspects: Sequence[type[_Aspect]] | None = None
    ) -> AspectMap:
        """Latest version of the named aspects (all when None) for many URNs at once.

        Every requested URN is a key of the result; a URN with no aspects maps to
        ``{}`` so callers can tell a dangling reference from a missing key.
        Timeseries aspects are refused (read them with :meth:`timeseries`); an
        unfiltered read leaves out key aspects, see :func:`listed_by_default`.
        """

    def related(
        self,
        urns: Sequence[str],
        relationship: str,
        direction: Direction = "outgoing",
    ) -> dict[str, list[str]]:
        """Entities linked by a relationship named in the SDK's ``@Relationship`` annotations.

        Every requested URN is a key.  Outgoing: targets in stored order, read from
        the carrying aspects.  Incoming: the entities whose carrying aspect points
        at the URN, sorted.  A name used by several aspects (``Consumes``) follows
        all of them; filter by entity type when only one is meant.
        """

    def timeseries(
        self, urns: Sequence[str], aspect: type[AspectT], limit: int = 100
    ) -> dict[str, list[AspectT]]:
        """The newest ``limit`` events of a timeseries aspect (operation, assertionRunEvent, ...) for many URNs
        at once, newest first; every requested URN is a key."""

    def timeseries_values(
        self, urns: Sequence[str], aspect: type[_Aspect], paths: Sequence[str], limit: int = 100
    ) -> dict[str, list[tuple[Any, ...]]]:
        """For the events :meth:`timeseries` returns, each one's values at ``paths`` (dotted field names such as
        ``result.type``; None where a path reaches no value), without building every event: the cheap read of a
        long history a caller needs a few fields of.  Each value is checked against its field's schema."""

    def list_urns(self, entity_type: str) -> list[str]:
        """Every URN of one entity type (``mlModel``, ``dataset``...), sorted; soft-deleted left out."""

    def changes_since(self, token: str | None) -> Changes:
        """The entities written since ``token`` (see :class:`Changes`); a store that cannot say answers None."""

    def emit_mcps(self, mcps: Iterable[MetadataChangeProposalWrapper]) -> WriteReport:
        """Write proposals; failures are reported per proposal, never raised mid-batch.

        Only a store that cannot be reached at all (``ServiceUnreachable``) or
        that refuses the credentials (``ConfigError``) raises: writes are
        idempotent, so the whole call can be retried.
        """

    def close(self) -> None:
        """Release files and connections."""


def location_of(target: str) -> str:
    """How an adapter names the store it opens; local records (ledgers, pending writes) are keyed by it, and
    reports show it: a URL's credentials (``http://admin:pass@host``) are no part of it."""
    if target.startswith(("http://", "https://")):
        parts = urlsplit(target.rstrip("/"))
        return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
    return str(Path(target).expanduser())


def batches(items: Iterable[_T], size: int) -> Iterator[list[_T]]:
    """Consecutive lists of at most ``size`` items, drawn lazily so a generated estate never sits whole in memory."""
    stream = iter(items)
    while batch := list(islice(stream, size)):
        yield batch


def requested_names(aspects: Sequence[type[_Aspect]] | None) -> list[str] | None:
    """Aspect names to ask a store for; None asks for every aspect.

    Timeseries aspects are refused because no store keeps one latest value for
    them: GMS serves them from a separate API and Lite's version 0 is whichever
    event was written last, not the newest.
    """
    if aspects is None:
        return None
    timeseries = [a.ASPECT_NAME for a in aspects if a.get_aspect_type() == "timeseries"]
    if timeseries:
        raise ValueError(f"{', '.join(timeseries)}: timeseries aspects are read with timeseries()")
    return [a.ASPECT_NAME for a in aspects]


def listed_by_default(aspect_name: str) -> bool:
    """Whether an aspect belongs in an unfiltered :meth:`MetadataGraph.get_aspects` answer.

    Key aspects are left out: the URN already holds their content, and stores
    differ on whether they exist for a URN nobody wrote, so dropping them keeps
    a dangling reference at ``{}`` everywhere.  Aspects the SDK cannot type and
    timeseries aspects are left out too.
    """
    aspect_class = ASPECT_NAME_MAP.get(aspect_name)
    return (
        aspect_class is not None
        and aspect_name not in KEY_ASPECT_NAMES
        and aspect_class.get_aspect_type() != "timeseries"
    )


def values_at(event: _Aspect, paths: Sequence[str]) -> tuple[Any, ...]:
    """An event's values at dotted ``paths``, read from the SDK's object (None where a step holds none): what
    :meth:`MetadataGraph.timeseries_values` answers for a store that only hands out whole events."""
    found = []
    for path in paths:
        value: Any = event
        for step in path.split("."):
            value = getattr(value, step, None) if value is not None else None
        found.append(value)
    return tuple(found)
