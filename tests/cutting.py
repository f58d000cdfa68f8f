"""Real services that stop answering part-way through a run, cut at the network boundary.

The server behind stays real (an ``mlflow server``, the warehouse's Postgres);
only the wire between it and Recall is cut, the way a crashed server, a
failover or a dropped connection look from the client's side.
"""

from __future__ import annotations

import http.client
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable, Iterator
from urllib.parse import urlsplit

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length"}


class HttpCut:
    """A reverse proxy that relays requests to ``upstream`` until ``cut_when(path, times_seen)`` says stop;
    from then on it drops every request without an answer, as a server that died does."""

    def __init__(self, upstream: str, cut_when: Callable[[str, int], bool]) -> None:
        self.upstream, self.cut_when = urlsplit(upstream), cut_when
        self.seen: list[str] = []
        self.cut = False
        self.lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _relay(self) -> None:
                path = self.path.split("?")[0]
                with proxy.lock:
                    proxy.seen.append(path)
                    proxy.cut = proxy.cut or proxy.cut_when(path, proxy.seen.count(path))
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if proxy.cut:
                    self.close_connection = True
                    return
                conn = http.client.HTTPConnection(proxy.upstream.hostname, proxy.upstream.port, timeout=60)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
                conn.request(self.command, self.path, body=body or None, headers=headers)
                answer = conn.getresponse()
                payload = answer.read()
                self.send_response(answer.status)
                for key, value in answer.getheaders():
                    if key.lower() not in HOP_BY_HOP:
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
                conn.close()

            do_GET = do_POST = do_PATCH = do_DELETE = _relay

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class TcpCut:
    """A TCP relay to ``target`` (``(host, port)``, or a unix socket's path) that severs each connection once
    the server has sent it ``limit`` bytes: a warehouse that goes away in the middle of a result."""

    def __init__(self, target: tuple[str, int] | str, limit: int) -> None:
        self.target, self.limit = target, limit
        self.severed = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if isinstance(self.target, str):
                server = socket.socket(socket.AF_UNIX)
                server.connect(self.target)
            else:
                server = socket.create_connection(self.target)
            threading.Thread(target=self._pipe, args=(client, server, None), daemon=True).start()
            threading.Thread(target=self._pipe, args=(server, client, self.limit), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket, limit: int | None) -> None:
        sent = 0
        try:
            while chunk := source.recv(8192):
                if limit is not None and sent + len(chunk) > limit:
                    sink.sendall(chunk[: limit - sent])
                    self.severed += 1
                    break
                sink.sendall(chunk)
                sent += len(chunk)
        except OSError:
            pass
        for end in (source, sink):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            end.close()

    def close(self) -> None:
        self._listener.close()


def free_port() -> int:
    """A port nothing listens on (just now): a server that is down."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def mlflow_server(backend_uri: str, log: Path, artifacts: Path | None = None) -> Iterator[str]:
    """A real ``mlflow server`` (one worker) over ``backend_uri``, serving artifacts it keeps in ``artifacts``
    (else ``./mlartifacts``); yields its URL."""
    port = free_port()
    mlflow = Path(sys.executable).with_name("mlflow")
    kept = ["--artifacts-destination", str(artifacts)] if artifacts else []
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(mlflow), "server", "--backend-store-uri", backend_uri, "--host", "127.0.0.1", "--port", str(port),
             "--workers", "1", *kept],
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"mlflow server did not start: {log.read_text()[-2000:]}") from None
                time.sleep(0.25)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
