"""Shared pieces of the write-back tests: the estate, scans over it, and a GMS that misbehaves.

The estate is the scan tests' healthy one, broken and healed by hand-written
MCP files under ``fixtures/`` (DataHub's file format).  On DataHub Lite they are
loaded with DataHub's own ``file`` source and ``datahub-lite`` sink; on the
fake GMS they are sent through :class:`GmsGraph` like any write.

:class:`WritebackGms` extends the graph tests' fake GMS with what write-back
needs: search by entity type, incoming edges computed from what was written,
timeseries aspects kept as events, a log of every proposal that landed, and
switches to fail a share of writes, drop connections, or refuse incidents on
mlModels the way servers before DataHub PR #19112 do.
"""

from __future__ import annotations

import json
import sys
import threading
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator

TESTS = Path(__file__).resolve().parent.parent
for folder in ("scan", "graph"):
    if str(TESTS / folder) not in sys.path:
        sys.path.insert(0, str(TESTS / folder))

from datahub.emitter.mcp import MetadataChangeProposalWrapper  # noqa: E402
from datahub.ingestion.graph.client import entity_type_to_graphql  # noqa: E402
from datahub.metadata.schema_classes import ASPECT_NAME_MAP  # noqa: E402
from datahub.utilities.urns.urn import guess_entity_type  # noqa: E402
from scan_estates import SCAN_AT_MS, ingest  # noqa: E402
from test_graph_gms import FakeGms, Seen, _handler  # noqa: E402

from recall_dagster.detect import ScanConfig  # noqa: E402
from recall_dagster.graph import GmsGraph, MetadataGraph  # noqa: E402
from recall_dagster.graph.relationships import carrying_aspects, extract_targets  # noqa: E402
from recall_dagster.kept.baselines import MemoryStateStore  # noqa: E402
from recall_dagster.results import ScanResult  # noqa: E402
from recall_dagster.scan import run_scan  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures"
HEALTHY = str(TESTS / "scan" / "fixtures" / "estate_healthy.json")
BREAK = str(FIXTURES / "estate_break.json")
HEAL_TRAINING = str(FIXTURES / "estate_heal_training.json")
HEAL_DATA = str(FIXTURES / "estate_heal_data.json")
MODEL = "urn:li:mlModel:(urn:li:dataPlatform:mlflow,engagement_3,PROD)"
USER_STATS = "urn:li:dataset:(urn:li:dataPlatform:bigquery,proj.features.user_stats,PROD)"


def lite_estate(db: Path, *files: str) -> Path:
    """Load fixture files into a DataHub Lite file with DataHub's own file source and lite sink."""
    return ingest(db, *files)


def scan(graph: MetadataGraph, config: ScanConfig) -> ScanResult:
    return run_scan(graph, config, MemoryStateStore(), scanned_at_ms=SCAN_AT_MS)


def proposals(*files: str) -> list[MetadataChangeProposalWrapper]:
    """The MCPs of fixture files, in order."""
    items = [item for name in files for item in json.loads(Path(name).read_text())]
    return [MetadataChangeProposalWrapper.from_obj(item) for item in items]


@dataclass
class WritebackGms(FakeGms):
    # Of every `fail_every` POSTs (reads and writes alike), the last `fail_burst` answer 503 before doing anything.
    fail_every: int = 0
    fail_burst: int = 1
    fail_writes: bool = False  # every write request answers 503 (reads still work)
    fail_writes_after: int | None = None  # this many write requests land, then every write answers 503
    drop_writes: bool = False  # write requests get no answer at all
    refuse_model_incidents: bool = False
    refuse_documents: bool = False  # a server from before the document entity
    landed: list[tuple[str, str, str]] = field(default_factory=list)  # (urn, aspect, JSON) of every stored proposal
    _posts: int = 0
    _index: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    _writes: int = 0

    def answer(self, seen: Seen, auth: str | None) -> tuple[int, Any]:
        writing = seen.method == "POST" and seen.query.get("action") == ["ingestProposalBatch"]
        if writing and self.fail_writes_after is not None:
            self.fail_writes = self.fail_writes or self._writes >= self.fail_writes_after
            self._writes += 1
        if self.fail_writes and writing:
            return 503, {"message": "Service Unavailable", "status": 503}
        if seen.method == "POST":
            self._posts += 1
            if self.fail_every and self._posts % self.fail_every > self.fail_every - 1 - self.fail_burst:
                return 503, {"message": "Service Unavailable", "status": 503}
        return super().answer(seen, auth)

    def _ingest(self, proposals: list[dict]) -> tuple[int, Any]:
        self._index.clear()
        for p in proposals:
            value = json.loads(p["aspect"]["value"])
            on_model = any(e.startswith("urn:li:mlModel:") for e in value.get("entities", []))
            if self.refuse_model_incidents and p["aspectName"] == "incidentInfo" and on_model:
                return 422, {"message": "Unsupported entity type mlModel for incident", "status": 422}
            if self.refuse_documents and p["entityUrn"].startswith("urn:li:document:"):
                return 400, {"message": "Unknown entity type document", "status": 400}
        status, body = super()._ingest([p for p in proposals if not _is_event(p)])
        if status != 200:
            return status, body
        for p in proposals:
            if _is_event(p):
                self.events.setdefault((p["entityUrn"], p["aspectName"]), []).append(json.loads(p["aspect"]["value"]))
            self.landed.append((p["entityUrn"], p["aspectName"], p["aspect"]["value"]))
        return status, body

    def _scroll(self, variables: dict) -> dict:
        """Search: every stored entity of the asked types that is not soft-deleted."""
        types = set(variables["types"])
        found = [
            {"entity": {"urn": urn}}
            for urn, aspects in sorted(self.aspects.items())
            if entity_type_to_graphql(guess_entity_type(urn)) in types
            and not aspects.get("status", {}).get("removed")
        ]
        return {"data": {"scrollAcrossEntities": {"nextScrollId": None, "searchResults": found}}}

    def _edges(self, relationship: str) -> list[tuple[str, str]]:
        """Every edge of one type computed from the stored aspects, as GMS's graph index would hold them
        (kept until the next write: a scroll asks for them page after page)."""
        if relationship in self._index:
            return self._index[relationship]
        edges = []
        for urn, aspects in sorted(self.aspects.items()):
            for aspect_class in carrying_aspects(relationship):
                stored = aspects.get(aspect_class.ASPECT_NAME)
                if stored is not None:
                    edges += [(urn, t) for t in extract_targets(aspect_class.from_obj(stored), relationship)]
        self._index[relationship] = sorted(set(edges))
        return self._index[relationship]


def _is_event(proposal: dict) -> bool:
    return ASPECT_NAME_MAP[proposal["aspectName"]].get_aspect_type() == "timeseries"


def _dropping_handler(fake: WritebackGms) -> type:
    base = _handler(fake)

    class Handler(base):  # type: ignore[misc, valid-type]
        def _serve(self) -> None:
            if fake.drop_writes and self.command == "POST" and "ingestProposalBatch" in self.path:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.close_connection = True  # no status line: the client sees the connection die
                return
            super()._serve()

        do_GET = do_POST = _serve

    return Handler


@contextmanager
def serve(fake: WritebackGms) -> Iterator[WritebackGms]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _dropping_handler(fake))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def gms_estate(*files: str) -> Iterator[WritebackGms]:
    """A fake GMS holding the MCPs of ``files``, its logs of what was seen and landed cleared."""
    with serve(WritebackGms()) as server:
        with closing(GmsGraph(server.url, retries=0)) as graph:
            assert graph.emit_mcps(proposals(*files)).ok
        server.landed.clear()
        server.seen.clear()
        yield server
