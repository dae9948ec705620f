"""The legacy HTTP+SSE transport (2024-11-05) on Trio: ``serve_sse`` and
``open_sse_client``.  Deprecated by the spec since 2025-03-26; here for the
clients and servers that still speak it."""

from __future__ import annotations

from typing import Any, Unpack

import trio

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
    task_status: Any = trio.TASK_STATUS_IGNORED,
    **options: Unpack[SSEServeOptions],
) -> None:
    """Serve ``server`` over the legacy HTTP+SSE transport (GET ``sse_path``);
    ``limits`` bounds slow, idle and too many connections (not the event streams)."""
    router, listening = sse_router(server, options)
    await serve_router(server, router, task_status=task_status, **listening)


open_sse_client = OPENERS.sse
