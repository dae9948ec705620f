"""Serving a :class:`sansio_mcp.Server` over Streamable HTTP on Trio."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Iterable
from functools import partial
from typing import Any

import trio

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

from ._backend import PRIMITIVES
from ._runner import TrioSessionHost
from .server import TrioContext

__all__ = ["Router", "ServerLimits", "serve_http", "serve_router"]

logger = logging.getLogger("trio_adapters.http")

_READ_SIZE = 65536


class _HTTPSessionHost(RoutedOutput, TrioSessionHost):
    """A session served over HTTP: its output is routed to exchanges."""

    flushes_in_task = False  # routed at once: a flusher task would never be woken

    def __init__(self, router: Router, session: ServerSession, server: Server) -> None:
        def handle_request(event: RequestReceived) -> dict[str, Any] | Awaitable[dict[str, Any]]:
            return server.begin(TrioContext(self, event))

        TrioSessionHost.__init__(self, session, handle_request=handle_request)
        self.router = router


class _HTTPService:
    def __init__(self, server: Server, router: Router, max_body: int, limits: ServerLimits) -> None:
        self.router = router
        self.max_body = max_body
        self.limits = limits
        self.gate = ConnectionGate(limits)
        self.nursery: trio.Nursery | None = None

        def make_host(session: ServerSession) -> _HTTPSessionHost:
            host = _HTTPSessionHost(router, session, server)
            assert self.nursery is not None
            host.attach(self.nursery)
            return host

        self.hosts = SessionHosts(server, router, make_host)

    async def connection(self, stream: trio.abc.HalfCloseableStream) -> None:
        if not self.gate.enter():
            receive = partial(stream.receive_some, _READ_SIZE)
            try:
                await refuse_connection(
                    stream.send_all, stream.send_eof, receive, PRIMITIVES, self.limits
                )
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass  # the peer left first
            finally:
                await trio.aclose_forcefully(stream)
            return
        try:
            await self._serve(stream)
        finally:
            self.gate.leave()

    async def _serve(self, stream: trio.abc.Stream) -> None:
        conn = HTTPServerConnection(max_body=self.max_body)
        receive = partial(stream.receive_some, _READ_SIZE)

        async def answer(exchange: Exchange) -> bool:
            await self._answer(stream, conn, exchange)
            return True  # a client that went away breaks off the answer with an error

        try:
            await serve_requests(
                conn, receive, stream.send_all, answer, self.hosts, PRIMITIVES, self.limits
            )
        except* (trio.BrokenResourceError, trio.ClosedResourceError):
            pass  # the client went away (alone, or from inside the answer's nursery)
        except* Exception:
            # One broken connection must never take the server (and every other client) down.
            logger.exception("error while serving an HTTP connection; closing it")
        finally:
            await trio.aclose_forcefully(stream)

    async def _answer(
        self, stream: trio.abc.Stream, conn: HTTPServerConnection, exchange: Exchange
    ) -> None:
        if not exchange.head_ready:
            with trio.move_on_after(exchange.head_grace):
                while not exchange.head_ready:
                    await self._woken(exchange)
        if not exchange.streaming:
            body = exchange.take()
            await stream.send_all(conn.send_response(exchange.status, exchange.headers, body))
            return
        exchange.commit_head()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._watch_disconnect, stream, conn, exchange, nursery.cancel_scope)
            await stream.send_all(conn.send_head(exchange.status, exchange.headers))
            while True:
                # Read ``finished`` before taking: output may arrive while a chunk is sent.
                finished = exchange.finished
                chunk = exchange.take()
                if chunk:
                    await stream.send_all(conn.send_body(chunk))
                if finished:
                    break
                await self._woken(exchange)
            nursery.cancel_scope.cancel()
        await stream.send_all(conn.end())

    @staticmethod
    async def _woken(exchange: Exchange) -> None:
        """Until the exchange has news (output, its end), which may have come already
        (while a chunk was being sent)."""
        if not exchange.has_news:
            ready = trio.Event()
            exchange.wake = ready.set
            await ready.wait()

    async def _watch_disconnect(
        self,
        stream: trio.abc.Stream,
        conn: HTTPServerConnection,
        exchange: Exchange,
        scope: trio.CancelScope,
    ) -> None:
        try:
            while data := await stream.receive_some(_READ_SIZE):
                conn.receive_data(data)  # a pipelined request waits in h11
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        self.hosts.disconnected(exchange)
        scope.cancel()


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
    http = streamable_http_router(
        server,
        endpoint=endpoint,
        allowed_hosts=allowed_hosts,
        allowed_origins=allowed_origins,
        json_response=json_response,
    )
    await serve_router(
        server,
        http,
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
    service = _HTTPService(server, router, max_body, limits)
    listeners = await trio.open_tcp_listeners(port, host=host)
    bound = listeners[0].socket.getsockname()[1]
    async with trio.open_nursery() as nursery:
        service.nursery = nursery
        task_status.started(bound)
        await trio.serve_listeners(service.connection, listeners, handler_nursery=nursery)
