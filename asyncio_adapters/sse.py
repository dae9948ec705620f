"""The legacy HTTP+SSE transport (2024-11-05) on asyncio: ``serve_sse`` and
``open_sse_client`` (same semantics as :mod:`trio_adapters.sse`)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Unpack

from sansio_mcp.runtime._client_options import SSEClientOptions
from sansio_mcp.runtime._open_client import open_http
from sansio_mcp.runtime._serve_options import SSEServeOptions, sse_router
from sansio_mcp.runtime._server import Server

from .client import Client, hosted
from .http_client import _SSEClientHost as _SSEClientHost  # the bridge's links use it
from .http_server import serve_router

__all__ = ["open_sse_client", "serve_sse"]


async def serve_sse(
    server: Server,
    *,
    started: asyncio.Future[int] | None = None,
    **options: Unpack[SSEServeOptions],
) -> None:
    """:func:`trio_adapters.sse.serve_sse` on asyncio; ``started`` (if given)
    receives the bound port."""
    router, listening = sse_router(server, options)
    await serve_router(server, router, started=started, **listening)


@asynccontextmanager
async def open_sse_client(url: str, **options: Unpack[SSEClientOptions]) -> AsyncIterator[Client]:
    """:func:`trio_adapters.sse.open_sse_client` on asyncio."""
    async with open_http(url, options, _SSEClientHost, hosted, Client, legacy_sse=True) as client:
        yield client
