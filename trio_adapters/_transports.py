"""The Trio backend with this adapter's transports: a client for a command
or a URL, a server on a transport (what ``--backend trio`` runs on)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from functools import partial
from typing import Any

import trio

from sansio_mcp.runtime import ClientAPI, Server

from ._backend import TrioBackend

__all__ = ["BACKEND", "TrioTransports"]


class TrioTransports(TrioBackend):
    """The runtime's :class:`~sansio_mcp.runtime.TransportBackend` on Trio."""

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

        serves: dict[str, Callable[..., Awaitable[None]]] = {
            "http": serve_http,
            "sse": serve_sse,
            "ws": serve_ws,
        }
        async with trio.open_nursery() as nursery:
            bound = await nursery.start(partial(serves[transport], server, host=host, port=port))
            if on_bound is not None:
                on_bound(bound)


#: The Trio backend, with its transports.
BACKEND = TrioTransports()
