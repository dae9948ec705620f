"""The asyncio backend with this adapter's transports: a client for a command
or a URL, a server on a transport (what ``--backend asyncio`` runs on)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from sansio_mcp.runtime import TransportTable, stop_signals
from sansio_mcp.runtime.hosting import ClientOpeners, Listeners, imported_when_called

from ._backend import AsyncioBackend

__all__ = ["BACKEND", "AsyncioTransports"]


# Each transport is imported when first used, not with the adapter: a server never
# opens a client, a client never serves, and the network transports load h11 (HTTP,
# SSE) or wsproto (WebSocket), which a stdio program never speaks.
open_stdio_client = imported_when_called("asyncio_adapters.client", "open_stdio_client")
serve_stdio = imported_when_called("asyncio_adapters.server", "serve_stdio")
open_http_client = imported_when_called("asyncio_adapters.http_client", "open_http_client")
open_sse_client = imported_when_called("asyncio_adapters.sse", "open_sse_client")
open_ws_client = imported_when_called("asyncio_adapters.websocket", "open_ws_client")
serve_http = imported_when_called("asyncio_adapters.http_server", "serve_http")
serve_sse = imported_when_called("asyncio_adapters.sse", "serve_sse")
serve_ws = imported_when_called("asyncio_adapters.websocket", "serve_ws")


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
