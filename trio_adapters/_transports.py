"""The Trio backend with this adapter's transports: a client for a command
or a URL, a server on a transport (what ``--backend trio`` runs on)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, ClassVar

import trio

from sansio_mcp.runtime._server import Server
from sansio_mcp.runtime._transports import Listener, TransportTable, stop_signals

from ._backend import TrioBackend
from .client import open_stdio_client
from .http_client import open_http_client
from .http_server import serve_http
from .server import serve_stdio
from .sse import open_sse_client, serve_sse
from .websocket import open_ws_client, serve_ws

__all__ = ["BACKEND", "TrioTransports", "stop_on_signal"]


async def stop_on_signal(
    scope: trio.CancelScope, task_status: Any = trio.TASK_STATUS_IGNORED
) -> None:
    """Cancel ``scope`` at the first stop signal (started once the signals are caught)."""
    with trio.open_signal_receiver(*stop_signals()) as signals:
        task_status.started()
        async for _ in signals:
            scope.cancel()
            return


class TrioTransports(TransportTable, TrioBackend):
    """The runtime's :class:`~sansio_mcp.runtime.TransportBackend` on Trio."""

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
        async with trio.open_nursery() as nursery:
            await nursery.start(stop_on_signal, nursery.cancel_scope)
            await fn(*args)
            nursery.cancel_scope.cancel()

    async def serve_network(
        self,
        listener: Listener,
        server: Server,
        host: str,
        port: int,
        on_bound: Callable[[int], None] | None,
    ) -> None:
        async with trio.open_nursery() as nursery:
            bound = await nursery.start(partial(listener, server, host=host, port=port))
            if on_bound is not None:
                on_bound(bound)


#: The Trio backend, with its transports.
BACKEND = TrioTransports()
