"""Serving a :class:`sansio_mcp.Server` over Streamable HTTP on asyncio: the
listener; the service itself is the runtime's :class:`HTTPService`."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, Unpack

from sansio_mcp.runtime._backend import Connection, TaskGroup
from sansio_mcp.runtime._http_service import HTTPService, RoutedOutput, Router, ServerLimits
from sansio_mcp.runtime._serve_options import (
    HTTPServeOptions,
    Listening,
    RouterOptions,
    http_router,
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


def reporter(started: asyncio.Future[int] | None) -> OnBound:
    """``started.set_result``: a public ``started`` future as a listener's ``on_bound``."""
    return None if started is None else started.set_result


async def serve_router(
    server: Server,
    router: Router,
    *,
    started: asyncio.Future[int] | None = None,
    **options: Unpack[RouterOptions],
) -> None:
    """Serve any HTTP transport machine over TCP under ``limits`` until cancelled;
    ``started`` (if given) receives the bound port."""
    at = Listening.of(options)
    async with PRIMITIVES.open_task_group() as group:
        make_host = partial(_HTTPSessionHost.attached, group, router, server, AsyncioContext)
        service = HTTPService(server, router, make_host, PRIMITIVES, at.max_body, at.limits)
        connection = _over_tcp_stream(service.connection)
        await serve_tcp(group, connection, at.host, at.port, reporter(started))


def _over_tcp_stream(
    handler: Callable[[Connection], Awaitable[None]],
) -> Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]:
    return lambda reader, writer: handler(TCPStream(reader, writer))


async def serve_tcp(
    group: TaskGroup,
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
        group.start_soon(guarded, reader, writer)

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
    started: asyncio.Future[int] | None = None,
    **options: Unpack[HTTPServeOptions],
) -> None:
    """Serve ``server`` over Streamable HTTP at ``http://host:port/endpoint`` until cancelled;
    ``limits`` bounds slow, idle and too many connections."""
    router, listening = http_router(server, options)
    await serve_router(server, router, started=started, **listening)
