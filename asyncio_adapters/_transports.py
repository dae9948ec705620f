"""The asyncio backend with this adapter's transports: a client for a command
or a URL, a server on a transport (what ``--backend asyncio`` runs on)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any

from sansio_mcp.runtime import ClientAPI, Server

from ._backend import AsyncioBackend

__all__ = ["BACKEND", "AsyncioTransports"]


class AsyncioTransports(AsyncioBackend):
    """The runtime's :class:`~sansio_mcp.runtime.TransportBackend` on asyncio."""

    def connect(
        self, command: Sequence[str], url: str | None, transport: str | None, **options: Any
    ) -> AbstractAsyncContextManager[ClientAPI]:
        if url is None:
            from .client import open_stdio_client

            return open_stdio_client(command, **options)
        if url.startswith(("ws://", "wss://")):
            from .websocket import open_ws_client

            return open_ws_client(url, **options)
        if transport == "sse":
            from .sse import open_sse_client

            return open_sse_client(url, **options)
        from .http_client import open_http_client

        return open_http_client(url, **options)

    async def serve(
        self,
        server: Server,
        transport: str,
        host: str,
        port: int,
        *,
        on_bound: Callable[[int], None] | None = None,
    ) -> None:
        if transport == "stdio":
            from .server import serve_stdio

            await serve_stdio(server)
            return
        from .http_server import serve_http
        from .sse import serve_sse
        from .websocket import serve_ws

        serves: dict[str, Callable[..., Coroutine[Any, Any, None]]] = {
            "http": serve_http,
            "sse": serve_sse,
            "ws": serve_ws,
        }
        started: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        task = asyncio.create_task(serves[transport](server, host=host, port=port, started=started))
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
