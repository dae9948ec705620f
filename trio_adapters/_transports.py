"""The Trio backend with this adapter's transports: a client for a command
or a URL, a server on a transport (what ``--backend trio`` runs on)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import trio

from sansio_mcp.runtime import TransportTable, stop_signals
from sansio_mcp.runtime.hosting import ClientOpeners, Listeners, imported_when_called

from ._backend import TrioBackend

__all__ = ["BACKEND", "TrioTransports", "stop_on_signal"]


# Each transport is imported when first used, not with the adapter: a server never
# opens a client, a client never serves, and the network transports load h11 (HTTP,
# SSE) or wsproto (WebSocket), which a stdio program never speaks.
open_stdio_client = imported_when_called("trio_adapters.client", "open_stdio_client")
serve_stdio = imported_when_called("trio_adapters.server", "serve_stdio")
open_http_client = imported_when_called("trio_adapters.http_client", "open_http_client")
open_sse_client = imported_when_called("trio_adapters.sse", "open_sse_client")
open_ws_client = imported_when_called("trio_adapters.websocket", "open_ws_client")
serve_http = imported_when_called("trio_adapters.http_server", "serve_http")
serve_sse = imported_when_called("trio_adapters.sse", "serve_sse")
serve_ws = imported_when_called("trio_adapters.websocket", "serve_ws")


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

    clients = ClientOpeners(open_stdio_client, open_http_client, open_sse_client, open_ws_client)
    servers = Listeners(serve_stdio, serve_http, serve_sse, serve_ws, "task_status")

    async def until_stopped(self, fn: Callable[..., Awaitable[None]], *args: Any) -> None:
        async with trio.open_nursery() as nursery:
            await nursery.start(stop_on_signal, nursery.cancel_scope)
            await fn(*args)
            nursery.cancel_scope.cancel()


#: The Trio backend, with its transports.
BACKEND = TrioTransports()
