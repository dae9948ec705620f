"""Serving a :class:`sansio_mcp.Server` over Streamable HTTP on asyncio: the
listener; the service itself is the runtime's :class:`HTTPService`."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterable
from functools import partial
from typing import Any

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

from ._backend import PRIMITIVES, TCPStream, read_in_small_chunks
from ._runner import AsyncioSessionHost
from .server import AsyncioContext

__all__ = ["ServerLimits", "serve_http", "serve_router", "serve_tcp"]

logger = logging.getLogger("asyncio_adapters.http")

OnBound = Callable[[int], Any] | None


class _HTTPSessionHost(RoutedOutput, AsyncioSessionHost):
    """A session served over HTTP: its output is routed to exchanges."""


def host_in(
    group: asyncio.TaskGroup, router: Router, server: Server, session: ServerSession
) -> _HTTPSessionHost:
    """A session host for ``session``, its tasks in ``group`` (the ASGI app's too)."""
    host = serving(server, AsyncioContext, partial(_HTTPSessionHost, session))
    host.router = router
    host.attach(group)
    return host


def reporter(started: asyncio.Future[int] | None) -> OnBound:
    """``started.set_result``: a public ``started`` future as a listener's ``on_bound``."""
    return None if started is None else started.set_result


async def serve_router(
    server: Server,
    router: Router,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    max_body: int = 4 * 1024 * 1024,
    limits: ServerLimits = DEFAULT_LIMITS,
    started: asyncio.Future[int] | None = None,
) -> None:
    """Serve any HTTP transport machine over TCP under ``limits`` until cancelled;
    ``started`` (if given) receives the bound port."""
    async with asyncio.TaskGroup() as group:
        make_host = partial(host_in, group, router, server)
        service = HTTPService(
            server, router, make_host, PRIMITIVES, max_body=max_body, limits=limits
        )
        connection = _over_tcp_stream(service.connection)
        await serve_tcp(group, connection, host, port, reporter(started))


def _over_tcp_stream(
    handler: Callable[[ByteStream], Awaitable[None]],
) -> Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]:
    return lambda reader, writer: handler(TCPStream(reader, writer))


async def serve_tcp(
    group: asyncio.TaskGroup,
    connection: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]],
    host: str,
    port: int,
    on_bound: OnBound,
) -> None:
    """Accept TCP connections until cancelled, each handled by a task in ``group``
    and then closed, so cancelling the server cancels every connection too
    (``asyncio.start_server`` alone leaves them running, unlike Trio's
    ``serve_tcp``).  The listener is closed without ``wait_closed``, which on newer
    Pythons waits for the connections the group has yet to cancel.  ``on_bound``
    (if given) gets the bound port."""

    async def guarded(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await connection(reader, writer)
        except Exception:
            # One broken connection must never take the server (the group) down.
            logger.exception("error while serving a connection; closing it")
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await writer.wait_closed()

    def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        read_in_small_chunks(writer.transport)
        group.create_task(guarded(reader, writer))

    listener = await asyncio.start_server(accept, host, port)
    try:
        if on_bound is not None:
            on_bound(listener.sockets[0].getsockname()[1])
        await asyncio.get_running_loop().create_future()  # until cancelled
    finally:
        listener.close()


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
    started: asyncio.Future[int] | None = None,
) -> None:
    """Serve ``server`` over Streamable HTTP at ``http://host:port/endpoint`` until cancelled;
    ``limits`` bounds slow, idle and too many connections."""
    router = streamable_http_router(
        server,
        endpoint=endpoint,
        allowed_hosts=allowed_hosts,
        allowed_origins=allowed_origins,
        json_response=json_response,
    )
    await serve_router(
        server, router, host=host, port=port, max_body=max_body, limits=limits, started=started
    )
