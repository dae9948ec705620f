"""Shared helpers for the network transport tests: running servers on loopback,
a raw HTTP/1.1 client on plain sockets and h11, and JSON-RPC message builders.

Everything binds 127.0.0.1 on an ephemeral port and every await is bounded
by the caller's ``trio.fail_after``.
"""

from __future__ import annotations

import json
import queue
import re
import socket
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from functools import partial
from typing import Any

import h11
import trio
from peers import free_port  # noqa: F401 (the transports tests import it from here)

from sansio_mcp import NEED_DATA, ClientSession, RequestReceived, Session
from sansio_mcp._http import HTTPRequest
from sansio_mcp._sse import SSEEvent, SSEParser
from sansio_mcp._streamable_http import StreamableHTTPServer
from sansio_mcp._streamable_http_client import Endpoint, StreamableHTTPClient
from sansio_mcp._versions import (
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_PROTOCOL_VERSION,
)
from sansio_mcp.runtime import Context, Server
from sansio_mcp_apps.example_server import TOOL_NAMES
from trio_adapters import ClientHandlers

STATELESS = "2026-07-28"
NEWEST_HANDSHAKE = "2025-11-25"
EXAMPLE_TOOLS = set(TOOL_NAMES)
ROOT = {"uri": "file:///work/transport-tests", "name": "transport-tests"}
COUNTER_URI = "example://counter"


# Servers -------------------------------------------------------------------------------


@asynccontextmanager
async def serving(serve: Callable[..., Any], server: Server, **options: Any) -> AsyncIterator[int]:
    """Run ``serve(server, **options)`` (serve_http, serve_sse, serve_ws, serve_router)
    on 127.0.0.1:0 for the duration of the block; yields the bound port."""
    async with trio.open_nursery() as nursery:
        port = await nursery.start(partial(serve, server, host="127.0.0.1", port=0, **options))
        try:
            yield port
        finally:
            nursery.cancel_scope.cancel()


@contextmanager
def serving_in_thread(serve: Callable[..., Any], server: Server, **options: Any) -> Iterator[int]:
    """Run a Trio server in a thread of its own (for asyncio peers in the main
    thread); yields its port, and stops it (and joins the thread) on exit."""
    ports: queue.Queue[int | BaseException] = queue.Queue()
    token_box: list[tuple[trio.lowlevel.TrioToken, trio.CancelScope]] = []

    async def main() -> None:
        with trio.CancelScope() as scope:
            token_box.append((trio.lowlevel.current_trio_token(), scope))
            async with trio.open_nursery() as nursery:
                port = await nursery.start(
                    partial(serve, server, host="127.0.0.1", port=0, **options)
                )
                ports.put(port)

    def run() -> None:
        try:
            trio.run(main)
        except BaseException as exc:  # pragma: no cover - reported to the test
            ports.put(exc)

    thread = threading.Thread(target=run, name="trio-server", daemon=True)
    thread.start()
    try:
        got = ports.get(timeout=10)
        if isinstance(got, BaseException):
            raise got
        yield got
    finally:
        if token_box:
            token, scope = token_box[0]
            try:
                trio.from_thread.run_sync(scope.cancel, trio_token=token)
            except trio.RunFinishedError:
                pass
        thread.join(timeout=10)
        assert not thread.is_alive(), "the threaded Trio server did not stop"


def answer_head(sock: socket.socket, request: bytes) -> bytes:
    """Send ``request`` on a blocking socket; what came back up to (at least) the end
    of the answer's head."""
    sock.sendall(request)
    received = b""
    while b"\r\n\r\n" not in received:
        chunk = sock.recv(65536)
        assert chunk, received
        received += chunk
    return received


class Probe:
    """Instrumentation shared between a test and the ``probe_server`` tools."""

    def __init__(self) -> None:
        self.started = trio.Event()
        self.stopped = trio.Event()
        self.cancelled = False
        self.finished = False
        self.runs = 0


def probe_server(probe: Probe) -> Server:
    """A tiny server whose ``block`` tool records whether it started, finished or
    was cancelled (so a test can see the handler stop), plus ``add``."""
    server = Server("probe-server", "1.0.0")

    @server.tool()
    async def block(ctx: Context, seconds: float = 30.0) -> str:
        """Wait ``seconds`` (reporting progress once), unless cancelled."""
        probe.runs += 1
        probe.started.set()
        try:
            await ctx.report_progress(0, 1, "started")
            await ctx.sleep(seconds)
            probe.finished = True
            return "finished"
        except trio.Cancelled:
            probe.cancelled = True
            raise
        finally:
            probe.stopped.set()

    @server.tool()
    def add(a: float, b: float) -> float:
        """Add two numbers."""
        return a + b

    return server


# Client-side answers -------------------------------------------------------------------


class Answers:
    """Our client's answers to the server's questions, with a record of each question."""

    def __init__(self) -> None:
        self.elicited: list[str] = []
        self.sampled: list[str] = []
        self.roots_asked = 0

    def elicitation(self, params: dict[str, Any]) -> dict[str, Any]:
        self.elicited.append(params["message"])
        return {"action": "accept", "content": {"answer": f"answer to {params['message']}"}}

    async def sampling(self, params: dict[str, Any]) -> dict[str, Any]:
        content = params["messages"][-1]["content"]
        self.sampled.append(content.get("text", "") if isinstance(content, dict) else "")
        await trio.sleep(0)
        return {
            "role": "assistant",
            "content": {"type": "text", "text": "forty-two"},
            "model": "transport-test-model",
            "stopReason": "endTurn",
        }

    def roots(self) -> list[dict[str, Any]]:
        self.roots_asked += 1
        return [ROOT]

    def handlers(self) -> ClientHandlers:
        return ClientHandlers(
            sampling=self.sampling, elicitation=self.elicitation, roots=self.roots
        )


def texts(result: dict[str, Any]) -> str:
    return "\n".join(c["text"] for c in result.get("content", []) if c.get("type") == "text")


def split_at(data: bytes, cuts: list[int]) -> list[bytes]:
    """``data`` cut at the given offsets (taken modulo its length): how bytes might
    arrive from a socket."""
    points = sorted({c % (len(data) + 1) for c in cuts})
    pieces, last = [], 0
    for point in points:
        pieces.append(data[last:point])
        last = point
    pieces.append(data[last:])
    return [p for p in pieces if p]


# JSON-RPC builders ---------------------------------------------------------------------


def initialize(request_id: int = 1, version: str = NEWEST_HANDSHAKE) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "raw-test-client", "version": "0"},
        },
    }


INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def stateless_meta(
    capabilities: dict[str, Any] | None = None, version: str = STATELESS
) -> dict[str, Any]:
    return {
        META_PROTOCOL_VERSION: version,
        META_CLIENT_CAPABILITIES: capabilities or {},
        META_CLIENT_INFO: {"name": "raw-test-client", "version": "0"},
    }


def stateless_request(
    method: str,
    params: dict[str, Any] | None = None,
    *,
    request_id: int = 1,
    capabilities: dict[str, Any] | None = None,
    version: str = STATELESS,
) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": method,
        "params": {**(params or {}), "_meta": stateless_meta(capabilities, version)},
    }


def stateless_headers(message: dict[str, Any]) -> dict[str, str]:
    """The SEP-2243 headers mirrored from a stateless request body (written out by hand,
    independently of the library's own helper)."""
    params = message["params"]
    headers = {
        "MCP-Protocol-Version": params["_meta"][META_PROTOCOL_VERSION],
        "Mcp-Method": message["method"],
    }
    if message["method"] in ("tools/call", "prompts/get"):
        headers["Mcp-Name"] = params["name"]
    elif message["method"] == "resources/read":
        headers["Mcp-Name"] = params["uri"]
    return headers


POST_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


# The Streamable HTTP server machine alone (sans-IO) -----------------------------------


def post_request(message: Any, **headers: str) -> HTTPRequest:
    """A whole POST to ``/mcp`` as the machine receives it."""
    headers = {"host": "127.0.0.1:8000", **POST_HEADERS, **headers}
    return HTTPRequest("POST", "/mcp", headers, json.dumps(message).encode())


def open_machine_session(machine: StreamableHTTPServer, version: str) -> dict[str, str]:
    """Initialize a handshake session on ``machine``; the headers its requests carry."""
    session_id = machine.handle(post_request(initialize(version=version))).headers["mcp-session-id"]
    headers = {"mcp-session-id": session_id, "mcp-protocol-version": version}
    assert machine.handle(post_request(INITIALIZED, **headers)).status == 202
    return headers


def received_request(session: Session) -> RequestReceived:
    """The one request ``session`` has received (its other events are dropped)."""
    events = []
    while (event := session.next_event()) is not NEED_DATA:
        events.append(event)
    [request] = [e for e in events if isinstance(e, RequestReceived)]
    return request


# A raw HTTP/1.1 client -----------------------------------------------------------------


class RawResponse:
    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body

    def json(self) -> Any:
        return json.loads(self.body)

    def events(self) -> list[SSEEvent]:
        return sse_events(self.body)

    def messages(self) -> list[Any]:
        """JSON-RPC messages of an SSE body, or the JSON body as a one-item list."""
        if "text/event-stream" in self.headers.get("content-type", ""):
            return [json.loads(e.data) for e in self.events() if e.data.strip()]
        return [self.json()] if self.body.strip() else []

    def __repr__(self) -> str:
        return f"<RawResponse {self.status} {self.headers} {self.body[:300]!r}>"


def sse_events(data: bytes) -> list[SSEEvent]:
    parser = SSEParser()
    parser.feed(data)
    out = []
    while not isinstance(event := parser.next_event(), type):
        out.append(event)
    return out


class RawHTTP:
    """One HTTP/1.1 connection on a plain TCP socket, spoken with h11 directly."""

    def __init__(self, stream: trio.SocketStream, port: int) -> None:
        self.stream = stream
        self.port = port
        self.h11 = h11.Connection(h11.CLIENT)
        self._sse = SSEParser()

    @classmethod
    @asynccontextmanager
    async def connect(cls, port: int) -> AsyncIterator[RawHTTP]:
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        async with stream:
            yield cls(stream, port)

    async def send_request(
        self,
        method: str,
        target: str = "/mcp",
        headers: dict[str, str] | None = None,
        body: bytes | dict[str, Any] | list[Any] | None = None,
        *,
        host: str | None = None,
    ) -> None:
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        pairs = [("host", host if host is not None else f"127.0.0.1:{self.port}")]
        pairs += list((headers or {}).items())
        if body is not None:
            pairs.append(("content-length", str(len(body))))
        data = self.h11.send(h11.Request(method=method, target=target, headers=pairs)) or b""
        if body:
            data += self.h11.send(h11.Data(data=body)) or b""
        data += self.h11.send(h11.EndOfMessage()) or b""
        await self.stream.send_all(data)

    async def _next(self) -> Any:
        while True:
            event = self.h11.next_event()
            if event is h11.NEED_DATA:
                self.h11.receive_data(await self.stream.receive_some(65536))
                continue
            return event

    async def head(self) -> tuple[int, dict[str, str]]:
        while True:
            event = await self._next()
            if isinstance(event, h11.InformationalResponse):
                continue
            assert isinstance(event, h11.Response), event
            headers = {k.decode().lower(): v.decode() for k, v in event.headers}
            return event.status_code, headers

    async def body(self) -> bytes:
        chunks = []
        while True:
            event = await self._next()
            if isinstance(event, h11.Data):
                chunks.append(bytes(event.data))
            elif isinstance(event, (h11.EndOfMessage, h11.ConnectionClosed)):
                return b"".join(chunks)

    async def response(self) -> RawResponse:
        status, headers = await self.head()
        return RawResponse(status, headers, await self.body())

    async def next_sse(self) -> SSEEvent | None:
        """The next SSE event of a streaming body, or None at its end."""
        while True:
            event = self._sse.next_event()
            if not isinstance(event, type):
                return event
            got = await self._next()
            if isinstance(got, h11.Data):
                self._sse.feed(bytes(got.data))
            else:
                return None

    async def next_data_event(self) -> SSEEvent | None:
        """The next SSE event that carries data (priming events, SEP-1699, skipped)."""
        while True:
            event = await self.next_sse()
            if event is None or event.data:
                return event

    async def next_message(self) -> Any:
        """The next JSON-RPC message on an SSE body (comments and empty events skipped)."""
        while True:
            event = await self.next_sse()
            if event is None:
                return None
            if event.data.strip():
                return json.loads(event.data)

    def reuse(self) -> None:
        """Ready the connection for the next request (keep-alive)."""
        self.h11.start_next_cycle()
        self._sse = SSEParser()


async def request(
    port: int,
    method: str,
    target: str = "/mcp",
    headers: dict[str, str] | None = None,
    body: bytes | dict[str, Any] | list[Any] | None = None,
    *,
    host: str | None = None,
) -> RawResponse:
    """One request on a fresh connection; the whole response."""
    async with RawHTTP.connect(port) as conn:
        await conn.send_request(method, target, headers, body, host=host)
        return await conn.response()


async def post(
    port: int,
    message: Any,
    headers: dict[str, str] | None = None,
    *,
    target: str = "/mcp",
) -> RawResponse:
    return await request(port, "POST", target, {**POST_HEADERS, **(headers or {})}, message)


async def post_stateless(
    port: int, message: dict[str, Any], **overrides: str | None
) -> RawResponse:
    """POST a stateless request with its mirrored headers; ``overrides`` replace (or,
    with None, drop) individual headers (underscores for dashes)."""
    headers = {**POST_HEADERS, **stateless_headers(message)}
    for name, value in overrides.items():
        key = next((k for k in headers if k.lower() == name.replace("_", "-").lower()), None)
        if key is not None:
            del headers[key]
        if value is not None:
            headers[name.replace("_", "-")] = value
    return await request(port, "POST", "/mcp", headers, message)


async def open_legacy_session(port: int, version: str = NEWEST_HANDSHAKE) -> str:
    """initialize + notifications/initialized over raw HTTP; the Mcp-Session-Id."""
    response = await post(port, initialize(version=version))
    assert response.status == 200, response
    session_id = response.headers["mcp-session-id"]
    assert response.json()["result"]["protocolVersion"] == version
    headers = {"mcp-session-id": session_id, "mcp-protocol-version": version}
    done = await post(port, INITIALIZED, headers)
    assert done.status == 202, done
    return session_id


async def raw_exchange(
    port: int,
    data: bytes | list[bytes],
    *,
    shutdown: bool = False,
    pause: float = 0.0,
    read_for: float = 5.0,
) -> bytes:
    """Send raw bytes (optionally in pieces, ``pause`` seconds apart; optionally
    half-closing afterwards) and collect everything the server sends until it
    closes the connection or ``read_for`` seconds pass."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    received = bytearray()
    async with stream:
        try:
            for piece in [data] if isinstance(data, bytes) else data:
                await stream.send_all(piece)
                if pause:
                    await trio.sleep(pause)
            if shutdown:
                await stream.send_eof()
        except trio.BrokenResourceError:
            pass  # the server already closed: read what it said
        with trio.move_on_after(read_for):
            try:
                while chunk := await stream.receive_some(65536):
                    received += chunk
            except trio.BrokenResourceError:
                pass
    return bytes(received)


_STATUS = re.compile(rb"HTTP/1\.[01] (\d{3}) ")


def statuses(data: bytes) -> list[int]:
    """Status codes of every response head in a raw byte dump."""
    return [int(m.group(1)) for m in _STATUS.finditer(data)]


class RecordingRouter:
    """Wraps a transport machine (Router) and records every request it handles as
    ``(HTTP method, path, JSON-RPC method or None, status)``."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.seen: list[tuple[str, str, str | None, int]] = []

    def handle(self, request: Any) -> Any:
        exchange = self.inner.handle(request)
        rpc_method = None
        try:
            body = json.loads(request.body) if request.body else None
            if isinstance(body, dict):
                rpc_method = body.get("method")
        except ValueError:
            pass
        self.seen.append((request.method, request.path, rpc_method, exchange.status))
        return exchange

    def flush(self, session: Any) -> None:
        self.inner.flush(session)

    def owns(self, session: Any) -> bool:
        return bool(self.inner.owns(session))

    def posted(self, rpc_method: str) -> list[int]:
        """Statuses of the POSTs that carried ``rpc_method``."""
        return [s for (m, _, r, s) in self.seen if m == "POST" and r == rpc_method]


def ready_http_client(
    capabilities: dict[str, Any] | None = None,
) -> tuple[ClientSession, StreamableHTTPClient]:
    """A handshake client session (2025-06-18) over the Streamable HTTP transport,
    initialized, its events drained."""
    client = ClientSession(capabilities=capabilities, mode="legacy", protocol_version="2025-06-18")
    transport = StreamableHTTPClient(Endpoint.parse("http://127.0.0.1:8000/mcp"), client)
    client.start()
    [initialize] = client.messages_to_send()
    result = {
        "protocolVersion": "2025-06-18",
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "s", "version": "1"},
    }
    transport.deliver([{"jsonrpc": "2.0", "id": initialize["id"], "result": result}], initialize)
    client.messages_to_send()  # notifications/initialized
    while client.next_event() is not NEED_DATA:
        pass
    return client, transport
