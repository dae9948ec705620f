"""The legacy HTTP+SSE transport (2024-11-05) on asyncio: ``serve_sse`` and
``open_sse_client`` (same semantics as :mod:`trio_adapters.sse`)."""

from __future__ import annotations

import asyncio
from typing import Unpack

from sansio_mcp.runtime._serve_options import SSEServeOptions, sse_router
from sansio_mcp.runtime._server import Server

from .http_client import OPENERS
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


open_sse_client = OPENERS.sse
