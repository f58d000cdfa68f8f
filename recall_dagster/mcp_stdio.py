"""The MCP server's stdio transport, bounded: a line longer than a limit is dropped as it is read, and a line that
is no JSON-RPC message is answered as JSON-RPC says.

The SDK's own transport reads a line of any length whole (a 5 MB argument once held the server nine minutes)
and answers a bad line only with a log notification, "Internal Server Error", under no id, which leaves a
client waiting for its answer.  Here a longer line is read on in chunks and dropped, memory staying within the
limit, and answered ``-32600 Invalid Request`` under the request's id when either end of the line shows it;
a line that is no JSON is answered ``-32700 Parse error`` (id null), JSON that is no JSON-RPC message
``-32600``; the server reads on either way.
"""

from __future__ import annotations

import json
import re
import sys
from contextlib import asynccontextmanager
from typing import AsyncIterator, Awaitable, Callable, NamedTuple

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage
from mcp.types import INVALID_REQUEST, PARSE_ERROR, JSONRPCMessage, RequestId
from pydantic import ValidationError

MAX_MESSAGE_BYTES = 1 << 20
"""The longest JSON-RPC message read: Recall's largest honest request (a tool call naming a model, a dataset,
a column) is well under a kilobyte, while the SDK reads a stdio line of any length and an HTTP body up to 4 MiB."""
_CHUNK = 1 << 16
_EDGE = 1 << 10
_STRING = rb'"(?:[^"\\]|\\.)*"'
_ID = rb'"id"\s*:\s*(-?\d+|' + _STRING + rb")"
_LEADING_ID = re.compile(rb"\s*\{(?:\s*" + _STRING + rb"\s*:\s*" + _STRING + rb"\s*,)*?\s*" + _ID + rb"\s*[,}]")
_TRAILING_ID = re.compile(rb"[{,]\s*" + _ID + rb"\s*\}\s*$")


class _Cut(NamedTuple):
    """All that is kept of a line past the limit: its two ends, where clients write a request's id."""

    head: bytes
    tail: bytes


async def _lines(read: Callable[[int], Awaitable[bytes]], limit: int) -> AsyncIterator[bytes | _Cut]:
    """Each line ``read`` gives, or the :class:`_Cut` of one longer than ``limit``, whose middle is read on in
    chunks and dropped: memory stays within ``limit`` and a chunk whatever a client sends."""
    pending = bytearray()
    cut: _Cut | None = None  # a line past the limit, while its middle is being dropped
    while True:
        chunk = await read(_CHUNK)
        searched = len(pending)
        pending += chunk or b"\n"  # the end of input ends the last line too
        while (end := pending.find(b"\n", searched)) >= 0:
            line, searched = bytes(pending[:end]), 0
            del pending[: end + 1]
            if cut is None and len(line) <= limit:
                yield line
            else:
                yield _Cut(cut.head if cut else line[:_EDGE], ((cut.tail if cut else b"") + line[-_EDGE:])[-_EDGE:])
            cut = None
        if cut is None and len(pending) > limit:
            cut = _Cut(bytes(pending[:_EDGE]), b"")
        if cut is not None:
            cut = cut._replace(tail=(cut.tail + pending[-_EDGE:])[-_EDGE:])
            pending.clear()
        if not chunk:
            return


def _refusal(code: int, message: str, request_id: RequestId | None) -> bytes:
    """A JSON-RPC error answer; the SDK's model of one cannot hold the null id JSON-RPC asks for."""
    answer = {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
    return json.dumps(answer, separators=(",", ":")).encode()


def _id_of(data: object) -> RequestId | None:
    """``data``'s request id, when it has one: a client waits for the answer under it, JSON-RPC says null else."""
    found = data.get("id") if isinstance(data, dict) else None
    return found if isinstance(found, (int, str)) and not isinstance(found, bool) else None


def _cut_id(cut: _Cut) -> RequestId | None:
    """The id of the request ``cut`` was, when it is the last member (the Python and TypeScript SDKs write it
    there) or comes after members with string values only (``{"jsonrpc": "2.0", "id": ...``)."""
    found = _TRAILING_ID.search(cut.tail) or _LEADING_ID.match(cut.head)
    try:
        return _id_of({"id": json.loads(found[1])}) if found else None
    except ValueError:  # an escape or a byte JSON refuses inside the id
        return None


def _received(line: bytes | _Cut, limit: int) -> SessionMessage | bytes | None:
    """The message ``line`` holds, or the JSON-RPC error that answers it; ``None`` for a blank line."""
    if isinstance(line, _Cut):
        return _refusal(INVALID_REQUEST, f"Invalid Request: a message is at most {limit} bytes, this one is longer",
                        _cut_id(line))
    if not line.strip():
        return None
    try:
        data = json.loads(line.decode("utf-8"))
    except (ValueError, RecursionError) as err:  # invalid UTF-8 too, and nesting deeper than Python recurses
        return _refusal(PARSE_ERROR, f"Parse error: {err}", None)
    try:
        return SessionMessage(JSONRPCMessage.model_validate(data))
    except ValidationError:
        return _refusal(INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 request, notification or response",
                        _id_of(data))


@asynccontextmanager
async def bounded_stdio(limit: int) -> AsyncIterator[
        tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]]:
    """The SDK's stdio transport, but reading lines of at most ``limit`` bytes and answering on stdout, as JSON-RPC
    says, a line that is no message: the SDK reads a line of any length whole, and answers a bad one only with a
    log notification, "Internal Server Error", under no id."""
    stdin, stdout = anyio.wrap_file(sys.stdin.buffer), anyio.wrap_file(sys.stdout.buffer)
    incoming_send, incoming = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    outgoing, outgoing_receive = anyio.create_memory_object_stream[SessionMessage | bytes](0)
    refusals = outgoing.clone()

    async def read() -> None:
        async with incoming_send, refusals:
            async for line in _lines(stdin.read1, limit):
                received = _received(line, limit)
                if isinstance(received, SessionMessage):
                    await incoming_send.send(received)
                elif received is not None:
                    await refusals.send(received)

    async def write() -> None:
        async with outgoing_receive:
            async for message in outgoing_receive:
                data = message if isinstance(message, bytes) else message.message.model_dump_json(
                    by_alias=True, exclude_none=True).encode()
                await stdout.write(data + b"\n")
                await stdout.flush()

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(read)
        tasks.start_soon(write)
        yield incoming, outgoing
