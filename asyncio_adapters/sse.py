"""The legacy HTTP+SSE transport (2024-11-05) on asyncio: ``serve_sse`` and
``open_sse_client`` (same semantics as :mod:`trio_adapters.sse`)."""

from __future__ import annotations

import asyncio
from typing import Unpack

from sansio_mcp.runtime import Server
from sansio_mcp.runtime.hosting import SSEServeOptions, sse_router

from .http_client import OPENERS
from .http_server import serve_router

__all__ = ["SSEClientHost", "open_sse_client", "serve_sse"]

#: The session host of one legacy HTTP+SSE client connection on this backend (what
#: ``open_sse_client`` drives; an application opening its own links builds one).
SSEClientHost = OPENERS.sse_host


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
