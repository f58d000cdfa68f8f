"""GmsGraph against a local stand-in for DataHub GMS that records every request.

The fake speaks the endpoints and payload shapes the SDK's DataHubGraph uses
(openapi v3 batchGet, relationships v1, getTimeseriesAspectValues, the openapi
v2 scrolls of edges and timeseries, GraphQL scrollAcrossEntities, restli
ingestProposalBatch); nothing else is mocked.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from contextlib import closing
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import parse_qs, urlparse

import pytest
from click.testing import CliRunner
from datahub.emitter.mce_builder import make_ml_feature_urn
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata.schema_classes import (
    MLFeaturePropertiesClass,
    MLModelPropertiesClass,
    OperationClass,
    UpstreamLineageClass,
)
from datahub.utilities.urns.urn import guess_entity_type
from graph_estate import Estate

from recall_dagster.cli import cli
from recall_dagster.errors import EXIT_UNREACHABLE, ConfigError, ServiceUnreachable
from recall_dagster.graph import GmsGraph, MetadataGraph, open_graph
from recall_dagster.graph.gms import PER_URN_LIMIT

from recall_dagster.settings import Settings


@dataclass
class Seen:
    method: str
    path: str
    query: dict[str, list[str]]
    body: Any


@dataclass
class FakeGms:
    """Just enough of GMS, backed by dicts; ``seen`` records every request."""

    url: str = ""
    seen: list[Seen] = field(default_factory=list)
    aspects: dict[str, dict[str, dict]] = field(default_factory=dict)
    events: dict[tuple[str, str], list[dict]] = field(default_factory=dict)
    incoming: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    url_pages: list[list[str]] = field(default_factory=list)
    token: str | None = None
    reject: str | None = None  # a batch holding this text is refused with HTTP 400
    broken: bool = False  # every write fails with HTTP 500
    failing_reads: int | None = None  # every read answers this HTTP status
    garbled: bool = False  # every read answers 200 with a body that is not JSON
    shapeless: bool = False  # every read answers 200 with JSON of a shape GMS never sends
    scrolls: bool = True  # serves the OpenAPI v2 scrolls of edges and timeseries (DataHub 0.13 on)
    delay: float = 0.0

    def answer(self, seen: Seen, auth: str | None) -> tuple[int, Any]:
        time.sleep(self.delay)
        if self.token and auth != f"Bearer {self.token}":
            return 401, {"message": "Unauthorized", "status": 401}
        route = (seen.method, seen.path)
        if route == ("GET", "/config"):
            return 200, {"noCode": "true"}
        reading = not (seen.method == "POST" and seen.query.get("action") == ["ingestProposalBatch"])
        if reading and self.failing_reads:
            return self.failing_reads, {"message": "Service Unavailable", "status": self.failing_reads}
        if reading and self.garbled:
            return 200, b"<html>502 Bad Gateway</html>"
        if reading and self.shapeless:
            return 200, {"unexpected": True}
        if seen.method == "POST" and seen.path.endswith("/batchGet"):
            return 200, self._batch_get(seen.body)
        if route == ("GET", "/openapi/relationships/v1/"):
            return 200, self._relationships(seen.query)
        scroll = seen.path.removeprefix("/openapi/v2/").split("/")
        if seen.method == "GET" and self.scrolls and scroll[0] == "relationship" and len(scroll) == 2:
            edges = [{"relationshipType": scroll[1], "source": {"urn": s}, "destination": {"urn": d}}
                     for s, d in self._edges(scroll[1])]
            return 200, self._page(edges, seen.query)
        if seen.method == "GET" and self.scrolls and scroll[0] == "timeseries" and len(scroll) == 3:
            return 200, self._page(self._events_of(scroll[1], scroll[2]), seen.query)
        if route == ("POST", "/aspects") and seen.query["action"] == ["getTimeseriesAspectValues"]:
            return 200, self._timeseries(seen.body)
        if route == ("POST", "/api/graphql"):
            return 200, self._scroll(seen.body["variables"])
        if route == ("POST", "/aspects") and seen.query["action"] == ["ingestProposalBatch"]:
            return self._ingest(seen.body["proposals"])
        return 404, {"message": f"no route {route}"}

    def _batch_get(self, body: list[dict]) -> list[dict]:
        found = []
        for request in body:
            stored = self.aspects.get(request["urn"], {})
            names = [n for n in request if n != "urn"] or list(stored)
            values = {n: {"value": stored[n]} for n in names if n in stored}
            if values:
                found.append({"urn": request["urn"], **values})
        return found

    def _edges(self, relationship: str) -> list[tuple[str, str]]:
        """(source, destination) of every edge of one type, as GMS's graph index holds them."""
        return sorted((s, d) for (d, rel), sources in self.incoming.items() if rel == relationship for s in sources)

    def _relationships(self, query: dict[str, list[str]]) -> dict:
        start = int(query["start"][0])
        rel, target = query["relationshipTypes"][0], query["urn"][0]
        urns = list(dict.fromkeys(s for s, d in self._edges(rel) if d == target)) if start == 0 else []
        entities = [{"urn": u, "relationshipType": rel} for u in urns]
        return {"start": start, "count": len(entities), "total": len(entities), "entities": entities}

    def _events_of(self, entity_type: str, aspect: str) -> list[dict]:
        """Every stored event of one aspect on one entity type, newest first, as the timeseries scroll answers."""
        found = [{"urn": urn, "timestampMillis": e["timestampMillis"], "event": e}
                 for (urn, name), events in self.events.items()
                 if name == aspect and guess_entity_type(urn) == entity_type for e in events]
        return sorted(found, key=lambda item: (-item["timestampMillis"], item["urn"]))

    @staticmethod
    def _page(results: list[dict], query: dict[str, list[str]]) -> dict:
        start, count = int((query.get("scrollId") or ["0"])[0]), int(query["count"][0])
        more = start + count < len(results)
        return {"scrollId": str(start + count) if more else None, "results": results[start : start + count]}

    def _timeseries(self, body: dict) -> dict:
        events = sorted(self.events.get((body["urn"], body["aspect"]), []), key=lambda e: -e["timestampMillis"])
        values = [{"aspect": {"value": json.dumps(e), "contentType": "application/json"}} for e in events]
        return {"value": {"limit": body["limit"], "values": values[: body["limit"]]}}

    def _scroll(self, variables: dict) -> dict:
        page = int(variables.get("scrollId") or 0)
        results = [{"entity": {"urn": u}} for u in self.url_pages[page]]
        more = page + 1 < len(self.url_pages)
        return {"data": {"scrollAcrossEntities": {"nextScrollId": str(page + 1) if more else None, "searchResults": results}}}

    def _ingest(self, proposals: list[dict]) -> tuple[int, Any]:
        if self.broken:
            return 500, {"message": "java.lang.OutOfMemoryError", "status": 500}
        if self.reject and any(self.reject in p["aspect"]["value"] for p in proposals):
            return 400, {"message": "aspect failed validation", "status": 400}
        for p in proposals:
            self.aspects.setdefault(p["entityUrn"], {})[p["aspectName"]] = json.loads(p["aspect"]["value"])
        return 200, {}

    def requests_to(self, method: str, path_suffix: str) -> list[Seen]:
        return [s for s in self.seen if s.method == method and s.path.endswith(path_suffix)]


def _handler(fake: FakeGms) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            parsed = urlparse(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            seen = Seen(self.command, parsed.path, parse_qs(parsed.query), json.loads(raw) if raw else None)
            fake.seen.append(seen)
            status, payload = fake.answer(seen, self.headers.get("Authorization"))
            body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _serve

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


@pytest.fixture
def fake() -> Iterator[FakeGms]:
    state = FakeGms()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    yield state
    server.shutdown()
    server.server_close()


@pytest.fixture
def gms(fake: FakeGms) -> Iterator[GmsGraph]:
    with closing(GmsGraph(fake.url, retries=0)) as graph:
        yield graph


@pytest.fixture
def filled(fake: FakeGms, gms: GmsGraph, estate: Estate) -> FakeGms:
    assert gms.emit_mcps(estate.mcps()).ok
    fake.seen.clear()
    return fake


def test_open_graph_picks_gms_for_urls_lazily(fake: FakeGms, tmp_path: Path) -> None:
    with closing(open_graph(fake.url)) as graph:
        assert isinstance(graph, GmsGraph) and isinstance(graph, MetadataGraph)
    with closing(open_graph(Settings(home=tmp_path, graph=fake.url))) as graph:
        assert isinstance(graph, MetadataGraph) and graph.location == fake.url
    assert fake.seen == []  # opening talks to nobody, nor does asking where the graph is


def test_get_aspects_one_batch_per_entity_type_typed(filled: FakeGms, gms: GmsGraph, estate: Estate) -> None:
    features = [make_ml_feature_urn("order_features", f"unwritten_{i}") for i in range(150)]
    found = gms.get_aspects([estate.model, estate.total, estate.count, estate.mart, *features])

    batch_gets = filled.requests_to("POST", "/batchGet")
    assert sorted(s.path for s in batch_gets) == [
        "/openapi/v3/entity/dataset/batchGet",
        "/openapi/v3/entity/mlFeature/batchGet",
        "/openapi/v3/entity/mlModel/batchGet",
    ]
    model = found[estate.model]["mlModelProperties"]
    assert isinstance(model, MLModelPropertiesClass) and model.mlFeatures == [estate.total, estate.count]
    assert isinstance(found[estate.mart]["upstreamLineage"], UpstreamLineageClass)
    assert found[features[0]] == {} and len(found) == 154


def test_get_aspects_asks_each_type_only_for_aspects_it_has(filled: FakeGms, gms: GmsGraph, estate: Estate) -> None:
    found = gms.related([estate.model, estate.run], "Consumes")

    assert found == {estate.model: [estate.total, estate.count], estate.run: [estate.raw]}
    bodies = {s.path: s.body for s in filled.requests_to("POST", "/batchGet")}
    assert bodies["/openapi/v3/entity/mlModel/batchGet"] == [{"urn": estate.model, "mlModelProperties": {}}]
    assert bodies["/openapi/v3/entity/dataProcessInstance/batchGet"] == [
        {"urn": estate.run, "dataProcessInstanceInput": {}}
    ]


def test_related_incoming_uses_the_relationships_api(fake: FakeGms, gms: GmsGraph, estate: Estate) -> None:
    fake.incoming[(estate.total, "Consumes")] = [estate.run, estate.model, estate.model]

    assert gms.related([estate.total, estate.raw], "Consumes", "incoming") == {
        estate.total: sorted([estate.model, estate.run]),
        estate.raw: [],
    }
    first = fake.requests_to("GET", "/openapi/relationships/v1/")[0]
    assert first.query["direction"] == ["INCOMING"] and first.query["relationshipTypes"] == ["Consumes"]


def _datasets(n: int) -> list[str]:
    return [f"urn:li:dataset:(urn:li:dataPlatform:postgres,warehouse.t{i:04d},PROD)" for i in range(n)]


@pytest.mark.parametrize("scrolls", [True, False], ids=["scrolled", "server-without-scrolls"])
def test_incoming_edges_of_many_urns_come_from_scrolling_the_type_not_a_request_each(
    fake: FakeGms, gms: GmsGraph, scrolls: bool
) -> None:
    tables = _datasets(PER_URN_LIMIT + 150)
    for i, table in enumerate(tables):  # every third table has no edge
        fake.incoming[(table, "Asserts")] = [f"urn:li:assertion:a{i}-{k}" for k in range(12 * (i % 3 > 0))]
    fake.incoming[("urn:li:dataset:(urn:li:dataPlatform:postgres,elsewhere,PROD)", "Asserts")] = ["urn:li:assertion:x"]
    fake.scrolls = scrolls

    found = gms.related(tables, "Asserts", "incoming")

    assert found == {t: sorted(fake.incoming[(t, "Asserts")]) for t in tables}
    scrolled = fake.requests_to("GET", "/openapi/v2/relationship/Asserts")
    per_urn = fake.requests_to("GET", "/openapi/relationships/v1/")
    if scrolls:
        edges = sum(len(v) for v in fake.incoming.values())
        assert (len(scrolled), len(per_urn)) == (-(-edges // 1000), 0), "pages of a thousand edges, not one per URN"
    else:
        assert len(scrolled) == 1 and len(per_urn) >= len(tables), "an older server is asked per URN"


@pytest.mark.parametrize("scrolls", [True, False], ids=["scrolled", "server-without-scrolls"])
def test_histories_of_many_urns_come_from_scrolling_the_aspect_newest_first(
    fake: FakeGms, gms: GmsGraph, scrolls: bool
) -> None:
    tables = _datasets(PER_URN_LIMIT + 50)
    for i, table in enumerate(tables):  # 100 tables x 30 operations, interleaved in time
        fake.events[(table, "operation")] = [
            {"timestampMillis": 1_000 * t + i, "lastUpdatedTimestamp": 1_000 * t + i, "operationType": "INSERT"}
            for t in range(30)
        ]
    fake.scrolls = scrolls

    found = gms.timeseries(tables, OperationClass, limit=20)

    for i, table in enumerate(tables):
        assert [op.timestampMillis for op in found[table]] == [1_000 * t + i for t in range(29, 9, -1)]
    scrolled = fake.requests_to("GET", "/openapi/v2/timeseries/dataset/operation")
    if scrolls:  # 3,000 events newest first; every table has its 20 newest within the first 2,000
        assert len(scrolled) == 2 and not fake.requests_to("POST", "/aspects")
    else:
        assert len(fake.requests_to("POST", "/aspects")) == len(tables)


def test_a_scroll_page_that_is_not_one_is_a_clear_error(fake: FakeGms, gms: GmsGraph) -> None:
    fake.scrolls = False
    original = fake.answer

    def wrong_shape(seen: Seen, auth: str | None) -> tuple[int, Any]:
        return (200, ["not", "a", "page"]) if seen.path.startswith("/openapi/v2/") else original(seen, auth)

    fake.answer = wrong_shape  # type: ignore[method-assign]
    with pytest.raises(ServiceUnreachable, match="answered JSON of a shape GMS does not send while scrolling Asserts"):
        gms.related(_datasets(PER_URN_LIMIT + 1), "Asserts", "incoming")


def test_a_few_urns_are_still_asked_one_by_one(fake: FakeGms, gms: GmsGraph, estate: Estate) -> None:
    gms.related([estate.total, estate.raw], "Consumes", "incoming")
    gms.timeseries([estate.raw], OperationClass)
    assert not [s for s in fake.seen if s.path.startswith("/openapi/v2/")], "a scroll would read the whole estate"


def test_timeseries_newest_first_typed(fake: FakeGms, gms: GmsGraph, estate: Estate) -> None:
    fake.events[(estate.raw, "operation")] = [
        {"timestampMillis": t, "lastUpdatedTimestamp": t, "operationType": "INSERT"} for t in (2000, 3000, 1000)
    ]
    operations = gms.timeseries([estate.raw], OperationClass, limit=2)[estate.raw]

    assert [op.timestampMillis for op in operations] == [3000, 2000]
    assert all(isinstance(op, OperationClass) for op in operations)
    values = gms.timeseries_values([estate.raw], OperationClass, ["timestampMillis", "operationType"], limit=2)
    assert values == {estate.raw: [(3000, "INSERT"), (2000, "INSERT")]}
    body = fake.requests_to("POST", "/aspects")[0].body
    assert (body["urn"], body["entity"], body["aspect"], body["limit"]) == (estate.raw, "dataset", "operation", 2)


def test_list_urns_scrolls_every_page_sorted(fake: FakeGms, gms: GmsGraph) -> None:
    fake.url_pages = [["urn:li:mlModel:b", "urn:li:mlModel:c"], ["urn:li:mlModel:a"]]

    assert gms.list_urns("mlModel") == ["urn:li:mlModel:a", "urn:li:mlModel:b", "urn:li:mlModel:c"]
    calls = fake.requests_to("POST", "/api/graphql")
    assert len(calls) == 2 and calls[0].body["variables"]["types"] == ["MLMODEL"]


def _features(n: int, description: str = "fine") -> list[MetadataChangeProposalWrapper]:
    return [
        MetadataChangeProposalWrapper(
            entityUrn=make_ml_feature_urn("bulk", f"f{i}"),
            aspect=MLFeaturePropertiesClass(description=description if i == 3 else "fine"),
        )
        for i in range(n)
    ]


def test_emit_sends_at_most_200_proposals_per_request_synchronously(fake: FakeGms, gms: GmsGraph) -> None:
    report = gms.emit_mcps(_features(450))

    assert report.ok and report.written == 450
    batches = fake.requests_to("POST", "/aspects")
    assert [len(s.body["proposals"]) for s in batches] == [200, 200, 50]
    assert {s.body["async"] for s in batches} == {"false"}
    assert len(fake.aspects) == 450


def test_a_refused_proposal_is_reported_and_the_rest_written(fake: FakeGms, gms: GmsGraph) -> None:
    fake.reject = "poison"
    report = gms.emit_mcps(_features(5, description="poison"))

    assert report.written == 4
    assert [(urn, aspect) for urn, aspect, _ in report.failures] == [
        (make_ml_feature_urn("bulk", "f3"), "mlFeatureProperties")
    ]
    assert "400" in report.failures[0][2] and "failed validation" in report.failures[0][2]
    assert len(fake.aspects) == 4


def test_a_failing_server_is_not_flooded_with_single_retries(fake: FakeGms, gms: GmsGraph) -> None:
    fake.broken = True
    report = gms.emit_mcps(_features(3))

    assert report.written == 0 and len(report.failures) == 3
    assert "HTTP 500" in report.failures[0][2]
    assert len(fake.requests_to("POST", "/aspects")) == 1


def _closed_port_url() -> str:
    with closing(socket.socket()) as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def test_closed_port_is_service_unreachable_with_the_url(estate: Estate) -> None:
    url = _closed_port_url()
    graph = GmsGraph(url, retries=0)  # constructing is fine: nothing is contacted yet
    for call in (
        lambda: graph.get_aspects([estate.model]),
        lambda: graph.emit_mcps(estate.mcps()),
        lambda: graph.list_urns("mlModel"),
    ):
        with pytest.raises(ServiceUnreachable, match=url) as caught:
            call()
        assert caught.value.exit_code == EXIT_UNREACHABLE


def test_a_server_too_slow_to_answer_is_unreachable(fake: FakeGms, estate: Estate) -> None:
    fake.delay = 2.0
    with closing(GmsGraph(fake.url, timeout_sec=1, retries=0)) as graph:
        with pytest.raises(ServiceUnreachable, match="did not answer"):
            graph.timeseries([estate.raw], OperationClass)


def test_a_refused_token_names_the_variable_to_fix(fake: FakeGms, estate: Estate, tmp_path: Path) -> None:
    fake.token = "s3cret"
    with closing(GmsGraph(fake.url, token="wrong", retries=0)) as graph:
        for call in (lambda: graph.get_aspects([estate.model]), lambda: graph.emit_mcps(estate.mcps())):
            with pytest.raises(ConfigError, match="DATAHUB_GMS_TOKEN") as caught:
                call()
            assert "401" in str(caught.value)

    settings = Settings(home=tmp_path, graph=fake.url, gms_token="s3cret")
    with closing(open_graph(settings)) as graph:
        assert graph.get_aspects([estate.model]) == {estate.model: {}}


@pytest.mark.parametrize("status", [500, 503])
def test_a_server_answering_5xx_is_failing_not_bad_usage(fake: FakeGms, gms: GmsGraph, estate: Estate, status: int) -> None:
    fake.failing_reads = status
    for call in (lambda: gms.get_aspects([estate.model]), lambda: gms.timeseries([estate.raw], OperationClass)):
        with pytest.raises(ServiceUnreachable, match=f"is failing: HTTP {status} while") as caught:
            call()
        assert caught.value.exit_code == EXIT_UNREACHABLE and fake.url in str(caught.value)


def test_a_server_answering_malformed_json_is_failing(fake: FakeGms, gms: GmsGraph, estate: Estate) -> None:
    fake.garbled = True
    with pytest.raises(ServiceUnreachable, match="malformed JSON while reading") as caught:
        gms.get_aspects([estate.model])
    assert caught.value.exit_code == EXIT_UNREACHABLE


def test_a_server_answering_json_of_the_wrong_shape_is_failing(
    fake: FakeGms, gms: GmsGraph, estate: Estate, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A proxy or another service answering 200 with some JSON: exit 3 naming the server, not exit 2 with the
    bare text of a KeyError."""
    fake.shapeless = True
    for call in (lambda: gms.get_aspects([estate.model]), lambda: gms.list_urns("mlModel")):
        with pytest.raises(ServiceUnreachable, match="answered JSON of a shape GMS does not send") as caught:
            call()
        assert caught.value.exit_code == EXIT_UNREACHABLE and fake.url in str(caught.value)
    monkeypatch.setenv("RECALL_HOME", str(tmp_path))
    result = CliRunner().invoke(cli, ["scan", "--graph", fake.url])
    assert result.exit_code == EXIT_UNREACHABLE and fake.url in result.output, result.output


def test_the_scan_exits_3_naming_the_service_when_gms_fails(
    fake: FakeGms, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RECALL_HOME", str(tmp_path))
    fake.failing_reads = 503
    result = CliRunner().invoke(cli, ["scan", "--graph", fake.url])
    assert result.exit_code == EXIT_UNREACHABLE, result.output
    assert f"DataHub GMS at {fake.url} is failing: HTTP 503 while" in result.output
