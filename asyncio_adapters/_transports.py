"""The asyncio backend with this adapter's transports: a client for a command
or a URL, a server on a transport (what ``--backend asyncio`` runs on)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

from sansio_mcp.runtime._server import Server
from sansio_mcp.runtime._transports import Listener, TransportTable, stop_signals

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

    open_stdio_client = staticmethod(open_stdio_client)
    open_http_client = staticmethod(open_http_client)
    open_sse_client = staticmethod(open_sse_client)
    open_ws_client = staticmethod(open_ws_client)
    serve_stdio = staticmethod(serve_stdio)
    listeners: ClassVar[dict[str, Listener]] = {
        "http": serve_http,
        "sse": serve_sse,
        "ws": serve_ws,
    }

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

    async def serve_network(
        self,
        listener: Listener,
        server: Server,
        host: str,
        port: int,
        on_bound: Callable[[int], None] | None,
    ) -> None:
        started: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        task = asyncio.ensure_future(listener(server, host=host, port=port, started=started))
        try:
            bound = await started
            if on_bound is not None:
                on_bound(bound)
            await task
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


#: The asyncio backend, with its transports.
BACKEND = AsyncioTransports()
