"""The legacy HTTP+SSE transport (2024-11-05) on asyncio: ``serve_sse`` and
``open_sse_client`` (same semantics as :mod:`trio_adapters.sse`)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from sansio_mcp._client import ClientHandlers, new_client_session
from sansio_mcp._http import HTTPClientConnection, HTTPResponseHead
from sansio_mcp._legacy_sse import LegacySSEServer, LegacySSEStream
from sansio_mcp._ndjson import NEED_DATA
from sansio_mcp._server import Server
from sansio_mcp._streamable_http_client import Endpoint, StreamableHTTPClient
from sansio_mcp._versions import HANDSHAKE_REVISIONS

from .client import Client, run_client
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
    started: asyncio.Future[int] | None = None,
) -> None:
    """Serve ``server`` over the legacy HTTP+SSE transport (GET ``sse_path``) until cancelled."""
    router = LegacySSEServer(
        server.create_session,
        sse_path=sse_path,
        message_path=message_path,
        allowed_hosts=allowed_hosts,
        allowed_origins=allowed_origins,
    )
    await serve_router(server, router, host=host, port=port, max_body=max_body, started=started)


class _SSEClientHost(_HTTPClientHost):
    """Messages go out as POSTs to the endpoint the stream named; answers come on the stream."""

    def _after_input(self) -> None:
        self.driver.process_events()
        self._schedule_flush()

    async def run_stream(self, url: str, endpoint_ready: asyncio.Event) -> None:
        """Read the GET stream until it ends; learn the POST endpoint from it first."""
        source = Endpoint.parse(url)
        legacy = LegacySSEStream(url, self.transport)
        saved, self.transport.endpoint = self.transport.endpoint, source
        try:
            reader, writer = await self._open()
        finally:
            self.transport.endpoint = saved
        try:
            conn = HTTPClientConnection(source.host_header)
            writer.write(conn.send_request("GET", source.target, legacy.request_headers()))
            await writer.drain()
            while True:
                event = conn.next_event()
                if event is NEED_DATA:
                    data = await reader.read(_READ_SIZE)
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
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await writer.wait_closed()
            self.session.close()
            self.driver.process_events()
            endpoint_ready.set()  # (the opener sees the session closed: no endpoint came)


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
    handlers = handlers or ClientHandlers()
    session = new_client_session(
        handlers,
        client_info=client_info,
        supported_versions=supported_versions,
        protocol_version=protocol_version,
        mode="legacy" if mode == "auto" else mode,  # no stateless revision over HTTP+SSE
    )
    transport = StreamableHTTPClient(Endpoint.parse(url), session)
    host = _SSEClientHost(session, transport, handlers, max_body=max_body, ssl_context=None)
    ready = asyncio.Event()

    async def stream() -> None:
        await host.run_stream(url, ready)

    async with run_client(host, session, handlers, initialize_timeout, stream, ready) as client:
        yield client
