"""Serving a :class:`sansio_mcp.Server` over Streamable HTTP on asyncio."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterable
from functools import partial
from typing import Any

from sansio_mcp import RequestReceived, ServerSession
from sansio_mcp._http import HTTPServerConnection
from sansio_mcp._streamable_http import Exchange
from sansio_mcp.runtime._http_service import (
    DEFAULT_LIMITS,
    ConnectionGate,
    RoutedOutput,
    Router,
    ServerLimits,
    SessionHosts,
    refuse_connection,
    serve_requests,
    streamable_http_router,
)
from sansio_mcp.runtime._server import Server

from ._backend import PRIMITIVES, read_in_small_chunks
from ._runner import AsyncioSessionHost
from .server import AsyncioContext

__all__ = ["ServerLimits", "serve_http", "serve_router", "serve_tcp"]

logger = logging.getLogger("asyncio_adapters.http")

_READ_SIZE = 65536


class _HTTPSessionHost(RoutedOutput, AsyncioSessionHost):
    """A session served over HTTP: its output is routed to exchanges."""

    def __init__(self, router: Router, session: ServerSession, server: Server) -> None:
        def handle_request(event: RequestReceived) -> dict[str, Any] | Awaitable[dict[str, Any]]:
            return server.begin(AsyncioContext(self, event))

        AsyncioSessionHost.__init__(self, session, handle_request=handle_request)
        self.router = router


class _HTTPService:
    def __init__(
        self,
        server: Server,
        router: Router,
        max_body: int,
        limits: ServerLimits,
        group: asyncio.TaskGroup,
    ) -> None:
        self.router = router
        self.max_body = max_body
        self.limits = limits
        self.gate = ConnectionGate(limits)

        def make_host(session: ServerSession) -> _HTTPSessionHost:
            host = _HTTPSessionHost(router, session, server)
            host.attach(group)
            return host

        self.hosts = SessionHosts(server, router, make_host)

    async def connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if not self.gate.enter():

            async def send_all(data: bytes) -> None:
                writer.write(data)
                await writer.drain()

            async def send_eof() -> None:
                writer.write_eof()

            receive = partial(reader.read, _READ_SIZE)
            try:
                await refuse_connection(send_all, send_eof, receive, PRIMITIVES, self.limits)
            except (ConnectionError, OSError):
                pass  # the peer left first
            finally:
                writer.close()
            return
        try:
            await self._serve(reader, writer)
        finally:
            self.gate.leave()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = HTTPServerConnection(max_body=self.max_body)
        receive = partial(reader.read, _READ_SIZE)

        async def send_all(data: bytes) -> None:
            writer.write(data)
            await writer.drain()

        try:
            await serve_requests(
                conn,
                receive,
                send_all,
                partial(self._answer, reader, writer, conn),
                self.hosts,
                PRIMITIVES,
                self.limits,
            )
        except (ConnectionError, OSError):
            pass
        except Exception:
            # One broken connection must never take the server (and every other client) down.
            logger.exception("error while serving an HTTP connection; closing it")
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await writer.wait_closed()

    async def _answer(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        conn: HTTPServerConnection,
        exchange: Exchange,
    ) -> bool:
        """Write the exchange's response; False if the client went away."""
        ready = asyncio.Event()
        exchange.wake = ready.set
        if not exchange.head_ready:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(exchange.head_grace):
                    while not exchange.head_ready:
                        await ready.wait()
                        ready.clear()
        if not exchange.streaming:
            writer.write(conn.send_response(exchange.status, exchange.headers, exchange.take()))
            await writer.drain()
            return True
        exchange.commit_head()
        watcher = asyncio.create_task(self._watch_disconnect(reader, conn, exchange))
        try:
            writer.write(conn.send_head(exchange.status, exchange.headers))
            while True:
                # Read ``finished`` before taking: output may arrive while a chunk is sent.
                finished = exchange.finished
                chunk = exchange.take()
                if chunk:
                    writer.write(conn.send_body(chunk))
                    await writer.drain()
                if finished:
                    break
                await ready.wait()
                ready.clear()
            if watcher.done():
                return False  # the client is gone: nothing more to write
            writer.write(conn.end())
            await writer.drain()
            return True
        finally:
            watcher.cancel()
            # Let the watcher leave ``reader.read`` before the next request reads (keep-alive).
            await asyncio.wait([watcher])

    async def _watch_disconnect(
        self, reader: asyncio.StreamReader, conn: HTTPServerConnection, exchange: Exchange
    ) -> None:
        try:
            while data := await reader.read(_READ_SIZE):
                conn.receive_data(data)  # a pipelined request waits in h11
        except (ConnectionError, OSError):
            pass
        self.hosts.disconnected(exchange)
        # Wake the writer so it sees ``finished`` (else a dropped stream's task waits forever).
        exchange.wake()


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
        service = _HTTPService(server, router, max_body, limits, group)
        await serve_tcp(group, service.connection, host, port, started)


async def serve_tcp(
    group: asyncio.TaskGroup,
    connection: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]],
    host: str,
    port: int,
    started: asyncio.Future[int] | None,
) -> None:
    """Accept TCP connections until cancelled, each handled by a task in ``group``,
    so cancelling the server cancels every connection too (``asyncio.start_server``
    alone leaves them running, unlike Trio's ``serve_tcp``).  The listener is closed
    without ``wait_closed``, which on newer Pythons waits for the connections the
    group has yet to cancel.  ``started`` (if given) receives the bound port."""

    async def guarded(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await connection(reader, writer)
        except Exception:
            # One broken connection must never take the server (the group) down.
            logger.exception("error while serving a connection; closing it")
            writer.close()

    def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        read_in_small_chunks(writer.transport)
        group.create_task(guarded(reader, writer))

    listener = await asyncio.start_server(accept, host, port)
    try:
        if started is not None:
            started.set_result(listener.sockets[0].getsockname()[1])
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
