"""The legacy HTTP+SSE transport (2024-11-05) on asyncio: ``serve_sse`` and
``open_sse_client`` (same semantics as :mod:`trio_adapters.sse`)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import Unpack

from sansio_mcp._streamable_http_client import Endpoint, StreamableHTTPClient
from sansio_mcp.runtime._client_options import ClientOptions, SessionOptions
from sansio_mcp.runtime._http_client import LegacySSEClientHost
from sansio_mcp.runtime._http_service import DEFAULT_LIMITS, ServerLimits, legacy_sse_router
from sansio_mcp.runtime._server import Server

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
    limits: ServerLimits = DEFAULT_LIMITS,
    started: asyncio.Future[int] | None = None,
) -> None:
    """Serve ``server`` over the legacy HTTP+SSE transport (GET ``sse_path``) until cancelled;
    ``limits`` bounds slow, idle and too many connections (not the event streams)."""
    router = legacy_sse_router(
        server,
        sse_path=sse_path,
        message_path=message_path,
        allowed_hosts=allowed_hosts,
        allowed_origins=allowed_origins,
    )
    await serve_router(
        server, router, host=host, port=port, max_body=max_body, limits=limits, started=started
    )


class _SSEClientHost(LegacySSEClientHost, _HTTPClientHost):
    """The runtime's legacy HTTP+SSE client on this backend's HTTP client host."""


@asynccontextmanager
async def open_sse_client(
    url: str,
    *,
    max_body: int = 16 * 1024 * 1024,
    **options: Unpack[SessionOptions],
) -> AsyncIterator[Client]:
    """Connect to a legacy HTTP+SSE server (``url`` is its SSE endpoint)."""
    config = ClientOptions.of(options, mode="legacy")
    config = config.handshake_only()
    handlers, session = config.handlers, config.new_session()
    transport = StreamableHTTPClient(Endpoint.parse(url), session)
    host = _SSEClientHost(
        session, transport, handlers, max_body=max_body, ssl_context=None, auth=config.auth
    )
    ready = asyncio.Event()

    async def stream() -> None:
        await host.run_stream(url, ready)

    async with run_client(
        host, session, handlers, config.initialize_timeout, stream, ready
    ) as client:
        yield client
