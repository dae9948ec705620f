"""The legacy HTTP+SSE transport (2024-11-05) on Trio: ``serve_sse`` and
``open_sse_client``.  Deprecated by the spec since 2025-03-26; here for the
clients and servers that still speak it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Unpack

import trio

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
    task_status: Any = trio.TASK_STATUS_IGNORED,
    **options: Unpack[SSEServeOptions],
) -> None:
    """Serve ``server`` over the legacy HTTP+SSE transport (GET ``sse_path``);
    ``limits`` bounds slow, idle and too many connections (not the event streams)."""
    router, listening = sse_router(server, options)
    await serve_router(server, router, task_status=task_status, **listening)


@asynccontextmanager
async def open_sse_client(url: str, **options: Unpack[SSEClientOptions]) -> AsyncIterator[Client]:
    """Connect to a legacy HTTP+SSE server (``url`` is its SSE endpoint)."""
    async with open_http(url, options, _SSEClientHost, hosted, Client, legacy_sse=True) as client:
        yield client
