"""The metadata graph as a DataHub GMS server, through the SDK's ``DataHubGraph``.

Reads favour the primary store, which is immediately consistent after a
synchronous write: aspects come from the batch-get endpoint (one request per
entity type and batch), and outgoing edges are extracted from those aspects.
Only incoming edges need the relationships API, which is backed by the graph
index and so may lag writes by a few seconds.

A read about many URNs must not cost a request per URN: a full scan asks for
the incoming edges and histories of tens of thousands.  Past
:data:`PER_URN_LIMIT` URNs, incoming edges come from scrolling every edge of
the relationship type (``/openapi/v2/relationship/{type}``) and histories
from scrolling the aspect's events newest first
(``/openapi/v2/timeseries/{entity}/{aspect}``), a thousand a page, stopping
once every URN asked about has its ``limit``.  A server without those
endpoints (before DataHub 0.13) is asked once per URN, as before.

Failures are translated once, here, into the project's errors: a server that
does not answer is :class:`ServiceUnreachable` (exit 3), a refused token is a
:class:`ConfigError` naming ``DATAHUB_GMS_TOKEN``, anything else a
:class:`GraphError` carrying the server's own message.
"""

from __future__ import annotations

import json

from collections import defaultdict
from contextlib import contextmanager
from typing import Any, Iterator, Iterable, Protocol, Sequence, cast

import requests
from datahub.configuration.common import ConfigurationError
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.emitter.rest_emitter import EmitMode
from datahub.emitter.serialization_helper import post_json_transform
from datahub.ingestion.graph.client import DataHubGraph, RelationshipDirection
from datahub.ingestion.graph.config import DatahubClientConfig
from datahub.metadata.schema_classes import ENTITY_TYPE_TO_ASPECT_NAMES, _Aspect

from recall_dagster.errors import ConfigError, GraphError, RecallError, ServiceUnreachable, reason
from recall_dagster.graph.decode import decode_aspect, value_reader
from recall_dagster.graph.port import (
    AspectMap,
    AspectT,
    Changes,
    Direction,
    WriteReport,
    batches,
    listed_by_default,
    location_of,
    requested_names,
    values_at,
)
from recall_dagster.graph.relationships import carrying_aspects, entity_type, fields_for, outgoing

# GMS times out on large ingest batches; the SDK's REST emitter uses the same cap.
MAX_MCPS_PER_REQUEST = 200
# URNs per batch-get request: keeps request bodies and primary-store reads modest.
MAX_URNS_PER_READ = 200
# Beyond this many URNs, incoming edges and histories are scrolled for the whole estate instead of asked per URN.
PER_URN_LIMIT = 50
SCROLL_PAGE = 1000  # results per page of an OpenAPI v2 scroll


class _NoScroll(Exception):
    """The server has no such OpenAPI v2 scroll endpoint: ask per URN instead."""


def _by_entity_type(urns: Iterable[str]) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = defaultdict(list)
    for urn in urns:
        groups[entity_type(urn)].append(urn)
    return groups


def _names_for(etype: str, names: list[str] | None) -> list[str] | None:
    """Requested aspect names the entity type can carry: GMS rejects the others."""
    known = ENTITY_TYPE_TO_ASPECT_NAMES.get(etype)
    if names is None or known is None:
        return names
    return [n for n in names if n in known]


def _chain(err: BaseException | None) -> Iterator[BaseException]:
    while err is not None:
        yield err
        err = err.__cause__ or err.__context__


def _response(err: BaseException) -> requests.Response | None:
    """The HTTP response behind an error, wherever the SDK wrapped it."""
    for cause in _chain(err):
        response = getattr(cause, "response", None)
        if isinstance(response, requests.Response):
            return response
    return None


class _Event(Protocol):
    timestampMillis: int


def _stamp(event: _Aspect) -> int:
    """When a timeseries event happened: every timeseries aspect has ``timestampMillis`` (:meth:`timeseries`
    refuses any other aspect)."""
    return cast(_Event, event).timestampMillis


class GmsGraph:
    """:class:`~recall_dagster.graph.port.MetadataGraph` over DataHub GMS.

    The constructor never contacts the server; the first call does.
    """

    def __init__(
        self,
        url: str,
        token: str | None = None,
        *,
        timeout_sec: float = 30.0,
        retries: int = 2,
    ) -> None:
        self._url = location_of(url)  # what is shown and keyed: never the credentials a URL may carry
        self._server = url.rstrip("/")
        try:
            self._client = DataHubGraph(
                DatahubClientConfig(
                    server=self._server,
                    token=token,
                    timeout_sec=timeout_sec,
                    retry_max_times=retries,
                    openapi_ingestion=False,  # ingestProposalBatch: one wire format on every server
                )
            )
        except (ConfigurationError, ValueError) as err:
            raise ConfigError(f"cannot use DataHub GMS at {self._url}: {err}") from err

    @property
    def location(self) -> str:
        return self._url

    def _error(self, action: str, err: Exception) -> RecallError:
        silent = next(
            (c for c in _chain(err) if isinstance(c, (requests.ConnectionError, requests.Timeout))), None
        )
        if silent is not None:
            return ServiceUnreachable(
                f"DataHub GMS at {self._url} did not answer while {action} "
                f"({type(silent).__name__}); start it or point RECALL_GRAPH elsewhere"
            )
        response = _response(err)
        if response is None:
            if any(isinstance(c, json.JSONDecodeError) for c in _chain(err)):
                return self._not_gms(f"with malformed JSON while {action}")
            shapeless = next((c for c in _chain(err) if isinstance(c, (KeyError, IndexError, TypeError, AttributeError))),
                             None)
            if shapeless is not None:
                return self._not_gms(f"JSON of a shape GMS does not send while {action} ({reason(shapeless)})")
            return GraphError(f"DataHub GMS at {self._url} failed {action}: {err}")
        if response.status_code >= 500:
            return ServiceUnreachable(
                f"DataHub GMS at {self._url} is failing: HTTP {response.status_code} while {action} "
                f"({response.text[:200].strip()}); retry once it recovers"
            )
        if response.status_code in (401, 403):
            return ConfigError(
                f"DataHub GMS at {self._url} refused {action} (HTTP {response.status_code}); "
                "set DATAHUB_GMS_TOKEN to a valid personal access token"
            )
        return GraphError(
            f"DataHub GMS at {self._url} failed {action}: HTTP {response.status_code} {response.text[:300]}"
        )

    def _not_gms(self, answered: str) -> ServiceUnreachable:
        """An answer no working GMS gives: the server is failing, or something else answers at its address."""
        return ServiceUnreachable(f"DataHub GMS at {self._url} answered {answered}: it is failing "
                                  "(or RECALL_GRAPH points at something that is not GMS)")

    @contextmanager
    def _calling(self, action: str) -> Iterator[None]:
        try:
            yield
        except RecallError:
            raise
        except Exception as err:
            raise self._error(action, err) from err

    # -- reads -----------------------------------------------------------------

    def get_aspects(
        self, urns: Sequence[str], aspects: Sequence[type[_Aspect]] | None = None
    ) -> AspectMap:
        names = requested_names(aspects)
        result: AspectMap = {urn: {} for urn in urns}
        for etype, group in _by_entity_type(result).items():
            wanted = _names_for(etype, names)
            if wanted == []:
                continue  # nothing asked for applies to this entity type
            for batch in batches(group, MAX_URNS_PER_READ):
                with self._calling(f"reading {etype} aspects"):
                    found = self._client.get_entities(etype, list(batch), wanted)
                for urn, typed in found.items():
                    if urn in result:
                        result[urn].update(
                            (name, aspect)
                            for name, (aspect, _) in typed.items()
                            if wanted is not None or listed_by_default(name)
                        )
        return result

    def related(
        self,
        urns: Sequence[str],
        relationship: str,
        direction: Direction = "outgoing",
    ) -> dict[str, list[str]]:
        if direction == "outgoing":
            return outgoing(self.get_aspects(urns, carrying_aspects(relationship)), relationship)
        if direction != "incoming":
            raise ValueError(f"direction must be 'outgoing' or 'incoming', not {direction!r}")
        fields_for(relationship)  # an unknown name fails here as it does on Lite
        if len(urns) > PER_URN_LIMIT:
            try:
                return self._scroll_incoming(urns, relationship)
            except _NoScroll:
                pass
        result: dict[str, list[str]] = {}
        for urn in urns:
            with self._calling(f"reading {relationship} edges into {urn}"):
                found = self._client.get_related_entities(
                    urn, [relationship], RelationshipDirection.INCOMING
                )
                result[urn] = sorted({entity.urn for entity in found})
        return result

    def timeseries(
        self, urns: Sequence[str], aspect: type[AspectT], limit: int = 100
    ) -> dict[str, list[AspectT]]:
        if aspect.get_aspect_type() != "timeseries":
            raise ValueError(f"{aspect.ASPECT_NAME} is not a timeseries aspect: use get_aspects()")
        result: dict[str, list[AspectT]] = {urn: [] for urn in urns}
        if not result or limit < 1:
            return result
        if len(result) > PER_URN_LIMIT:
            try:
                return self._scroll_timeseries(urns, aspect, limit)
            except _NoScroll:
                pass
        for urn in result:
            # The endpoint wants a filter; one on the URN itself narrows nothing.
            only_this = {"or": [{"and": [{"field": "urn", "values": [urn], "condition": "EQUAL"}]}]}
            with self._calling(f"reading {aspect.ASPECT_NAME} of {urn}"):
                values = self._client.get_timeseries_values(urn, aspect, only_this, limit=limit)
            result[urn] = sorted(values, key=_stamp, reverse=True)
        return result

    def timeseries_values(
        self, urns: Sequence[str], aspect: type[_Aspect], paths: Sequence[str], limit: int = 100
    ) -> dict[str, list[tuple[Any, ...]]]:
        """Taken out of the events :meth:`timeseries` reads: GMS hands out whole events, so the request is the
        same and only the caller's work is less."""
        for path in paths:
            value_reader(aspect, path)  # an unknown path fails here as it does on Lite
        return {urn: [values_at(e, paths) for e in events] for urn, events in self.timeseries(urns, aspect, limit).items()}

    def _pages(self, path: str, action: str) -> Iterator[list[dict]]:
        """The result pages of an OpenAPI v2 scroll endpoint; :class:`_NoScroll` when the server lacks it."""
        scroll_id: str | None = None
        first = True
        while True:
            params: dict[str, object] = {"count": SCROLL_PAGE, **({"scrollId": scroll_id} if scroll_id else {})}
            try:
                with self._calling(action):
                    page = self._client._get_generic(f"{self._server}{path}", params=params)
            except GraphError as err:
                response = _response(err)
                if first and response is not None and response.status_code in (404, 405):
                    raise _NoScroll(path) from None
                raise
            first = False
            if not isinstance(page, dict) or not isinstance(page.get("results"), list):
                raise self._not_gms(f"JSON of a shape GMS does not send while {action} (not a scroll page)")
            yield [item for item in page["results"] if isinstance(item, dict)]
            scroll_id = page.get("scrollId")
            if not scroll_id:
                return

    def _scroll_incoming(self, urns: Sequence[str], relationship: str) -> dict[str, list[str]]:
        found: dict[str, set[str]] = {urn: set() for urn in urns}
        for page in self._pages(f"/openapi/v2/relationship/{relationship}", f"scrolling {relationship} edges"):
            for edge in page:
                target = (edge.get("destination") or {}).get("urn")
                source = (edge.get("source") or {}).get("urn")
                if target in found and source:
                    found[target].add(source)
        return {urn: sorted(sources) for urn, sources in found.items()}

    def _scroll_timeseries(self, urns: Sequence[str], aspect: type[AspectT], limit: int) -> dict[str, list[AspectT]]:
        result: dict[str, list[AspectT]] = {urn: [] for urn in urns}
        for etype, group in _by_entity_type(result).items():
            missing = set(group)
            path = f"/openapi/v2/timeseries/{etype}/{aspect.ASPECT_NAME}"
            for page in self._pages(path, f"scrolling {aspect.ASPECT_NAME} of {etype} entities"):
                for item in page:  # newest first across the estate
                    urn = item.get("urn")
                    if urn in missing and isinstance(item.get("event"), dict):
                        with self._calling(f"reading {aspect.ASPECT_NAME} of {urn}"):
                            result[urn].append(decode_aspect(aspect, post_json_transform(item["event"])))
                        if len(result[urn]) >= limit:
                            missing.discard(urn)
                if not missing:
                    break
        return {urn: sorted(events, key=_stamp, reverse=True) for urn, events in result.items()}

    def list_urns(self, entity_type: str) -> list[str]:
        with self._calling(f"listing {entity_type} entities"):
            return sorted(self._client.get_urns_by_filter(entity_types=[entity_type]))

    def changes_since(self, token: str | None) -> Changes:
        """GMS offers no feed of what changed that Recall can read over REST (its change log is a Kafka
        topic), so every scan over GMS reads the whole estate."""
        return Changes("", None)

    # -- writes ----------------------------------------------------------------

    def emit_mcps(self, mcps: Iterable[MetadataChangeProposalWrapper]) -> WriteReport:
        """Write in batches of at most 200, synchronously to the primary store.

        A batch GMS rejects (HTTP 4xx) is resent one proposal at a time so the
        report names the proposals it refused and the rest are still written; a
        batch that fails on the server's side is reported whole.  An unreachable
        server or a refused token raises: nothing is per-proposal about those, and
        writes are idempotent, so the whole call can simply be retried.
        """
        report = WriteReport()
        for batch in batches(mcps, MAX_MCPS_PER_REQUEST):
            self._emit_batch(batch, report)
        return report

    def _emit_batch(self, batch: Sequence[MetadataChangeProposalWrapper], report: WriteReport) -> None:
        try:
            with self._calling("writing metadata"):
                self._client.emit_mcps(list(batch), emit_mode=EmitMode.SYNC_PRIMARY)
        except (GraphError, ServiceUnreachable) as err:
            response = _response(err)
            if response is None and isinstance(err, ServiceUnreachable):
                raise  # no answer at all: the whole call is retried, nothing is per-proposal
            if len(batch) > 1 and response is not None and 400 <= response.status_code < 500:
                for mcp in batch:
                    self._emit_batch([mcp], report)
            else:
                report.failures.extend((m.entityUrn or "", m.aspectName or "", str(err)) for m in batch)
        else:
            report.written += len(batch)

    def close(self) -> None:
        self._client.close()
