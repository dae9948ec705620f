"""The asyncio backend with this adapter's transports: a client for a command
or a URL, a server on a transport (what ``--backend asyncio`` runs on)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from sansio_mcp.runtime import TransportTable, stop_signals
from sansio_mcp.runtime.hosting import ClientOpeners, Listeners

from ._backend import AsyncioBackend
from .client import open_stdio_client
from .http_client import open_http_client
from .http_server import serve_http
from .server import serve_stdio
from .sse import open_sse_client, serve_sse

__all__ = ["BACKEND", "AsyncioTransports"]


# The WebSocket transport loads wsproto; it is imported when first used, not with
# the adapter (most programs never speak WebSocket).
def open_ws_client(url: str, **options: Any) -> AbstractAsyncContextManager[Any]:
    """:func:`.websocket.open_ws_client`, imported on first use."""
    from .websocket import open_ws_client as open_client

    return open_client(url, **options)


async def serve_ws(*args: Any, **options: Any) -> None:
    """:func:`.websocket.serve_ws`, imported on first use."""
    from .websocket import serve_ws as serve

    await serve(*args, **options)


class AsyncioTransports(TransportTable, AsyncioBackend):
    """The runtime's :class:`~sansio_mcp.runtime.TransportBackend` on asyncio."""

    clients = ClientOpeners(open_stdio_client, open_http_client, open_sse_client, open_ws_client)
    servers = Listeners(serve_stdio, serve_http, serve_sse, serve_ws, "started")

    async def until_stopped(self, fn: Callable[..., Awaitable[None]], *args: Any) -> None:
        loop = asyncio.get_running_loop()
        work = asyncio.ensure_future(fn(*args))
        caught = stop_signals()
        for sig in caught:
            loop.add_signal_handler(sig, work.cancel)
        try:
            await work
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise  # we were cancelled ourselves, not stopped by a signal
        finally:
            for sig in caught:
                loop.remove_signal_handler(sig)


#: The asyncio backend, with its transports.
BACKEND = AsyncioTransports()
