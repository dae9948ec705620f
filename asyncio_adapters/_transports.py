"""The asyncio backend with this adapter's transports: a client for a command
or a URL, a server on a transport (what ``--backend asyncio`` runs on)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from sansio_mcp.runtime._transports import ClientOpeners, Listeners, TransportTable, stop_signals

from ._backend import AsyncioBackend
from .client import open_stdio_client
from .http_client import open_http_client
from .http_server import serve_http
from .server import serve_stdio
from .sse import open_sse_client, serve_sse
from .websocket import open_ws_client, serve_ws

__all__ = ["BACKEND", "AsyncioTransports"]


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
