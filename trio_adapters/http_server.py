"""Serving a :class:`sansio_mcp.Server` over Streamable HTTP on Trio: the
listener; the service itself is the runtime's :class:`HTTPService`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, Unpack

import trio

from sansio_mcp.runtime._backend import Connection
from sansio_mcp.runtime._http_service import HTTPService, RoutedOutput, Router, ServerLimits
from sansio_mcp.runtime._serve_options import (
    HTTPServeOptions,
    Listening,
    RouterOptions,
    http_router,
)
from sansio_mcp.runtime._server import Server

from ._backend import PRIMITIVES, NurseryGroup, TCPStream
from ._runner import TrioSessionHost
from .server import TrioContext

__all__ = ["Router", "ServerLimits", "serve_http", "serve_router", "serve_tcp"]

OnBound = Callable[[int], Any] | None


class _HTTPSessionHost(RoutedOutput, TrioSessionHost):
    """A session served over HTTP: its output is routed to exchanges."""


def _over_tcp_stream(
    handler: Callable[[Connection], Awaitable[None]],
) -> Callable[[trio.SocketStream], Awaitable[None]]:
    return lambda stream: handler(TCPStream(stream, stream.socket))


async def serve_tcp(
    handler: Callable[[trio.SocketStream], Awaitable[None]],
    host: str,
    port: int,
    on_bound: OnBound,
    handler_nursery: trio.Nursery | None = None,
) -> None:
    """Accept TCP connections until cancelled, each handled by ``handler`` and then
    closed; ``on_bound`` (if given) gets the bound port."""
    listeners = await trio.open_tcp_listeners(port, host=host)
    if on_bound is not None:
        on_bound(listeners[0].socket.getsockname()[1])

    async def connection(stream: trio.SocketStream) -> None:
        try:
            await handler(stream)
        finally:
            await trio.aclose_forcefully(stream)

    await trio.serve_listeners(connection, listeners, handler_nursery=handler_nursery)


async def serve_http(
    server: Server,
    *,
    task_status: Any = trio.TASK_STATUS_IGNORED,
    **options: Unpack[HTTPServeOptions],
) -> None:
    """Serve ``server`` over Streamable HTTP at ``http://host:port/endpoint``.

    ``task_status.started`` reports the bound port (useful with ``port=0``);
    ``limits`` bounds slow, idle and too many connections.  Runs until cancelled.
    """
    router, listening = http_router(server, options)
    await serve_router(server, router, task_status=task_status, **listening)


async def serve_router(
    server: Server,
    router: Router,
    *,
    task_status: Any = trio.TASK_STATUS_IGNORED,
    **options: Unpack[RouterOptions],
) -> None:
    """Serve any HTTP transport machine over TCP under ``limits``; reports the bound port."""
    at = Listening.of(options)
    async with trio.open_nursery() as nursery:
        group = NurseryGroup(nursery)
        make_host = partial(_HTTPSessionHost.attached, group, router, server, TrioContext)
        service = HTTPService(server, router, make_host, PRIMITIVES, at.max_body, at.limits)
        connection = _over_tcp_stream(service.connection)
        await serve_tcp(connection, at.host, at.port, task_status.started, nursery)
