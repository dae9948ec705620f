"""Serving a :class:`sansio_mcp.Server` over Streamable HTTP on Trio."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any, Protocol

import trio

from sansio_mcp import RequestReceived, ServerSession
from sansio_mcp._http import ConnectionEnded, HTTPError, HTTPRequest, HTTPServerConnection
from sansio_mcp._server import Server
from sansio_mcp._streamable_http import Exchange, StreamableHTTPServer

from ._runner import TrioSessionHost
from .server import TrioContext

__all__ = ["Router", "serve_http", "serve_router"]

logger = logging.getLogger("trio_adapters.http")

_READ_SIZE = 65536
# How long a stateless request's response head waits for its first output.
_HEAD_GRACE = 1.0


class Router(Protocol):
    """What the HTTP service needs of a transport machine (Streamable HTTP, legacy SSE)."""

    def handle(self, request: HTTPRequest) -> Exchange: ...

    def flush(self, session: ServerSession) -> None: ...

    def owns(self, session: ServerSession) -> bool: ...


class _HTTPSessionHost(TrioSessionHost):
    """A session served over HTTP: its output is routed to exchanges."""

    def __init__(self, http: Router, session: ServerSession, server: Server) -> None:
        async def handle_request(event: RequestReceived) -> dict[str, Any]:
            return await server.handle(TrioContext(self, event))

        super().__init__(session, handle_request=handle_request)
        self._http = http

    async def flush(self) -> None:
        assert isinstance(self.session, ServerSession)
        self._http.flush(self.session)


class _HTTPService:
    def __init__(self, server: Server, http: Router, max_body: int) -> None:
        self.server = server
        self.http = http
        self.max_body = max_body
        self.hosts: dict[int, _HTTPSessionHost] = {}
        self.nursery: trio.Nursery | None = None

    def host_for(self, session: ServerSession) -> _HTTPSessionHost:
        host = self.hosts.get(id(session))
        if host is None:
            host = _HTTPSessionHost(self.http, session, self.server)
            assert self.nursery is not None
            host.attach(self.nursery)
            self.hosts[id(session)] = host
            self.server.hub.add(session, host._schedule_flush)
        return host

    async def connection(self, stream: trio.abc.Stream) -> None:
        conn = HTTPServerConnection(max_body=self.max_body)
        try:
            while True:
                request = await self._read_request(stream, conn)
                if isinstance(request, ConnectionEnded):
                    return
                if isinstance(request, HTTPError):
                    await stream.send_all(conn.send_error_response(request.status, request.reason))
                    return
                exchange = self.http.handle(request)
                await self._answer(stream, conn, exchange)
                if not conn.start_next():
                    return
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        except Exception:
            # One broken connection must never take the server (and every other client) down.
            logger.exception("error while serving an HTTP connection; closing it")
        finally:
            await stream.aclose()

    async def _read_request(
        self, stream: trio.abc.Stream, conn: HTTPServerConnection
    ) -> HTTPRequest | HTTPError | ConnectionEnded:
        while True:
            event = conn.next_request()
            if isinstance(event, (HTTPRequest, HTTPError, ConnectionEnded)):
                return event
            data = await stream.receive_some(_READ_SIZE)
            conn.receive_data(data)

    async def _answer(
        self, stream: trio.abc.Stream, conn: HTTPServerConnection, exchange: Exchange
    ) -> None:
        session = exchange.session
        host = self.host_for(session) if session is not None else None
        if host is not None:
            host.driver.process_events()
            await host.flush()
        if not exchange.streaming:
            await self._respond(stream, conn, exchange)
            return
        ready = trio.Event()
        exchange.wake = ready.set
        head_sent = False
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._watch_disconnect, stream, conn, exchange, nursery.cancel_scope)
            # A stateless request's status may still change until its first output
            # (a handler refusing with -32021 gets HTTP 400): wait a little for it.
            with trio.move_on_after(_HEAD_GRACE):
                while not exchange.head_ready:
                    await ready.wait()
                    ready = trio.Event()
                    exchange.wake = ready.set
            if not exchange.streaming:
                nursery.cancel_scope.cancel()  # a plain response after all: sent below
            else:
                exchange.commit_head()
                await stream.send_all(conn.send_head(exchange.status, dict(exchange.headers)))
                head_sent = True
            while head_sent:
                # Read ``finished`` before taking: output may arrive while a chunk is sent.
                finished = exchange.finished
                chunk = exchange.take()
                if chunk:
                    await stream.send_all(conn.send_body(chunk))
                if finished:
                    break
                await ready.wait()
                ready = trio.Event()
                exchange.wake = ready.set
            nursery.cancel_scope.cancel()
        if not exchange.streaming:
            await self._respond(stream, conn, exchange)
            return
        if not head_sent:
            # The client went away before anything was sent.
            self._forget_if_done(exchange)
            raise trio.ClosedResourceError("the client disconnected")
        await stream.send_all(conn.end())
        self._forget_if_done(exchange)

    async def _respond(
        self, stream: trio.abc.Stream, conn: HTTPServerConnection, exchange: Exchange
    ) -> None:
        body = exchange.take()
        await stream.send_all(conn.send_response(exchange.status, dict(exchange.headers), body))
        self._forget_if_done(exchange)

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
        exchange.disconnected()
        if exchange.session is not None and id(exchange.session) in self.hosts:
            self.hosts[id(exchange.session)].driver.process_events()
        scope.cancel()

    def _forget_if_done(self, exchange: Exchange) -> None:
        session = exchange.session
        if session is None:
            return
        if exchange.finished and not self.http.owns(session):
            # A stateless request's own session: done with it.
            host = self.hosts.pop(id(session), None)
            self.server.hub.remove(session)
            if host is not None:
                host.cancel_all_handlers()


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
    task_status: Any = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``server`` over Streamable HTTP at ``http://host:port/endpoint``.

    ``task_status.started`` reports the bound port (useful with ``port=0``).
    Runs until cancelled.
    """
    http = StreamableHTTPServer(
        server.create_session,
        endpoint=endpoint,
        allowed_hosts=allowed_hosts,
        allowed_origins=allowed_origins,
        json_response=json_response,
        tool_input_schema=lambda name: (
            tool.input_schema if (tool := server.tools.get(name)) else None
        ),
    )
    await serve_router(
        server, http, host=host, port=port, max_body=max_body, task_status=task_status
    )


async def serve_router(
    server: Server,
    router: Router,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    max_body: int = 4 * 1024 * 1024,
    task_status: Any = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve any HTTP transport machine over TCP; reports the bound port."""
    service = _HTTPService(server, router, max_body)
    listeners = await trio.open_tcp_listeners(port, host=host)
    bound = listeners[0].socket.getsockname()[1]
    async with trio.open_nursery() as nursery:
        service.nursery = nursery
        task_status.started(bound)
        await trio.serve_listeners(service.connection, listeners, handler_nursery=nursery)
