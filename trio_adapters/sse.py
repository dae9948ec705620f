"""The legacy HTTP+SSE transport (2024-11-05) on Trio: ``serve_sse`` and
``open_sse_client``.  Deprecated by the spec since 2025-03-26; here for the
clients and servers that still speak it."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import trio

from sansio_mcp import ConnectionClosedError
from sansio_mcp._client import ClientHandlers, new_client_session
from sansio_mcp._http import HTTPClientConnection, HTTPResponseHead
from sansio_mcp._legacy_sse import LegacySSEServer, LegacySSEStream
from sansio_mcp._ndjson import NEED_DATA
from sansio_mcp._server import Server
from sansio_mcp._streamable_http_client import Endpoint, StreamableHTTPClient
from sansio_mcp._versions import HANDSHAKE_REVISIONS

from ._util import unwrap_single_exception
from .client import Client, start_client
from .http_client import _HTTPClientHost
from .http_server import serve_router

__all__ = ["open_sse_client", "serve_sse"]

_READ_SIZE = 65536


async def serve_sse(
    server: Server,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    sse_path: str = "/sse",
    message_path: str = "/messages",
    allowed_hosts: Iterable[str] | None = None,
    allowed_origins: Iterable[str] | None = None,
    max_body: int = 4 * 1024 * 1024,
    task_status: Any = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``server`` over the legacy HTTP+SSE transport (GET ``sse_path``)."""
    router = LegacySSEServer(
        server.create_session,
        sse_path=sse_path,
        message_path=message_path,
        allowed_hosts=allowed_hosts,
        allowed_origins=allowed_origins,
    )
    await serve_router(
        server, router, host=host, port=port, max_body=max_body, task_status=task_status
    )


class _SSEClientHost(_HTTPClientHost):
    """Messages go out as POSTs to the endpoint the stream named; answers come on the stream."""

    def _after_input(self) -> None:
        self.driver.process_events()
        assert self._nursery is not None
        self._nursery.start_soon(self.flush)

    async def run_stream(self, url: str, endpoint_ready: trio.Event) -> None:
        """Read the GET stream until it ends; learn the POST endpoint from it first."""
        source = Endpoint.parse(url)
        legacy = LegacySSEStream(url, self.transport)
        stream = await self._open_to(source)
        async with stream:
            conn = HTTPClientConnection(source.host_header)
            await stream.send_all(conn.send_request("GET", source.target, legacy.request_headers()))
            while True:
                event = conn.next_event()
                if event is NEED_DATA:
                    data = await stream.receive_some(_READ_SIZE)
                    conn.receive_data(data)
                    if not data:
                        break
                elif isinstance(event, HTTPResponseHead):
                    legacy.on_head(event)
                elif isinstance(event, bytes):
                    if legacy.on_body(event):
                        self._after_input()
                    if legacy.endpoint_known:
                        endpoint_ready.set()
                else:
                    break
        self.session.close()
        self.driver.process_events()
        endpoint_ready.set()  # (the opener sees the session closed: no endpoint came)

    async def _open_to(self, endpoint: Endpoint) -> trio.abc.Stream:
        saved = self.transport.endpoint
        self.transport.endpoint = endpoint
        try:
            return await self._open()
        finally:
            self.transport.endpoint = saved


@asynccontextmanager
async def open_sse_client(
    url: str,
    *,
    handlers: ClientHandlers | None = None,
    client_info: dict[str, Any] | None = None,
    protocol_version: str | None = None,
    mode: str = "legacy",
    supported_versions: Sequence[str] = HANDSHAKE_REVISIONS,
    initialize_timeout: float | None = 30.0,
    max_body: int = 16 * 1024 * 1024,
) -> AsyncIterator[Client]:
    """Connect to a legacy HTTP+SSE server (``url`` is its SSE endpoint)."""
    if mode == "auto":
        mode = "legacy"  # the stateless revision has no HTTP+SSE transport
    handlers = handlers or ClientHandlers()
    session = new_client_session(
        handlers,
        client_info=client_info,
        supported_versions=supported_versions,
        protocol_version=protocol_version,
        mode=mode,
    )
    transport = StreamableHTTPClient(Endpoint.parse(url), session)
    host = _SSEClientHost(session, transport, handlers, max_body=max_body, ssl_context=None)
    with unwrap_single_exception():
        async with trio.open_nursery() as nursery:
            host.attach(nursery)
            try:
                ready = trio.Event()
                nursery.start_soon(host.run_stream, url, ready)
                limit = math.inf if initialize_timeout is None else initialize_timeout
                with trio.fail_after(limit):
                    await ready.wait()
                if host.driver.closed:
                    raise ConnectionClosedError(
                        message="the SSE stream ended before it named the POST endpoint"
                    )
                client = await start_client(host, session, handlers, initialize_timeout)
                yield client
            finally:
                session.close()
                host.driver.process_events()
                nursery.cancel_scope.cancel()
