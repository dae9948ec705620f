"""Serving a :class:`sansio_mcp.Server` over Streamable HTTP on Trio: the
listener; the service itself is the runtime's :class:`HTTPService`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from functools import partial
from typing import Any

import trio

from sansio_mcp import ServerSession
from sansio_mcp.runtime._backend import ByteStream
from sansio_mcp.runtime._host import serving
from sansio_mcp.runtime._http_service import (
    DEFAULT_LIMITS,
    HTTPService,
    RoutedOutput,
    Router,
    ServerLimits,
    streamable_http_router,
)
from sansio_mcp.runtime._server import Server

from ._backend import PRIMITIVES, TCPStream
from ._runner import TrioSessionHost
from .server import TrioContext

__all__ = ["Router", "ServerLimits", "serve_http", "serve_router", "serve_tcp"]

OnBound = Callable[[int], Any] | None


class _HTTPSessionHost(RoutedOutput, TrioSessionHost):
    """A session served over HTTP: its output is routed to exchanges."""


def _host_in(
    nursery: trio.Nursery, router: Router, server: Server, session: ServerSession
) -> _HTTPSessionHost:
    host = serving(server, TrioContext, partial(_HTTPSessionHost, session))
    host.router = router
    host.attach(nursery)
    return host


def _over_tcp_stream(
    handler: Callable[[ByteStream], Awaitable[None]],
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
    host: str = "127.0.0.1",
    port: int = 0,
    endpoint: str = "/mcp",
    allowed_hosts: Iterable[str] | None = None,
    allowed_origins: Iterable[str] | None = None,
    json_response: bool = False,
    max_body: int = 4 * 1024 * 1024,
    limits: ServerLimits = DEFAULT_LIMITS,
    task_status: Any = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``server`` over Streamable HTTP at ``http://host:port/endpoint``.

    ``task_status.started`` reports the bound port (useful with ``port=0``);
    ``limits`` bounds slow, idle and too many connections.  Runs until cancelled.
    """
    router = streamable_http_router(
        server,
        endpoint=endpoint,
        allowed_hosts=allowed_hosts,
        allowed_origins=allowed_origins,
        json_response=json_response,
    )
    await serve_router(
        server,
        router,
        host=host,
        port=port,
        max_body=max_body,
        limits=limits,
        task_status=task_status,
    )


async def serve_router(
    server: Server,
    router: Router,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    max_body: int = 4 * 1024 * 1024,
    limits: ServerLimits = DEFAULT_LIMITS,
    task_status: Any = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve any HTTP transport machine over TCP under ``limits``; reports the bound port."""
    async with trio.open_nursery() as nursery:
        make_host = partial(_host_in, nursery, router, server)
        service = HTTPService(
            server, router, make_host, PRIMITIVES, max_body=max_body, limits=limits
        )
        connection = _over_tcp_stream(service.connection)
        await serve_tcp(connection, host, port, task_status.started, nursery)
