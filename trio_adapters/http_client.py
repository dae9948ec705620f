"""The Trio MCP client over Streamable HTTP: ``open_http_client(url)``."""

from __future__ import annotations

import contextlib
import socket
import ssl
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import trio

from sansio_mcp import ClientSession, _json
from sansio_mcp._http import ConnectionPool
from sansio_mcp._streamable_http_client import (
    GET_STREAM_HEAD_WAIT,
    Endpoint,
    ResponseHandler,
    RoundTrip,
    SendOrder,
    StreamableHTTPClient,
)
from sansio_mcp._versions import ALL_REVISIONS
from sansio_mcp.runtime._client import ClientHandlers, new_client_session

from ._runner import TrioSessionHost
from ._util import unwrap_single_exception
from .client import Client, start_client

__all__ = ["open_http_client"]

_READ_SIZE = 65536
_QUICKACK: int | None = getattr(socket, "TCP_QUICKACK", None)


def _ack_now(stream: trio.abc.Stream) -> None:
    """Acknowledge what arrived at once: on a kept-alive connection Linux delays
    ACKs, and a server that holds its next write until the last one is ACKed
    (Nagle) would stall each answer 40 ms between its head and its body."""
    transport = stream.transport_stream if isinstance(stream, trio.SSLStream) else stream
    if _QUICKACK is not None and isinstance(transport, trio.SocketStream):
        with contextlib.suppress(OSError):
            transport.socket.setsockopt(socket.IPPROTO_TCP, _QUICKACK, 1)


class _HTTPClientHost(TrioSessionHost):
    """Every queued message goes out as its own POST, in its own task, on a
    kept-alive connection when one is idle."""

    def __init__(
        self,
        session: ClientSession,
        transport: StreamableHTTPClient,
        handlers: ClientHandlers,
        *,
        max_body: int,
        ssl_context: ssl.SSLContext | None,
    ) -> None:
        super().__init__(
            session,
            **handlers.host_callbacks(),
        )
        self.transport = transport
        self.max_body = max_body
        self.ssl_context = ssl_context
        self.pool: ConnectionPool[trio.abc.Stream] = ConnectionPool()
        self._get_running = False
        self._order = SendOrder(self.new_signal)
        # Cancel scopes of the POSTs in flight, by the JSON-RPC id they carry.
        self._posts: dict[Any, trio.CancelScope] = {}

    def attach(self, nursery: trio.Nursery) -> None:
        super().attach(nursery)
        nursery.start_soon(self._hold_connections)

    async def _hold_connections(self) -> None:
        """Live as long as the host: its end closes the idle kept-alive connections."""
        try:
            await trio.sleep_forever()
        finally:
            for stream in self.pool.close():
                await trio.aclose_forcefully(stream)

    def _schedule_flush(self) -> None:
        # Sending only starts tasks, so it needs no flusher task of its own.
        self._send_queued()

    async def flush(self) -> None:
        self._send_queued()

    def _send_queued(self) -> None:
        assert self._nursery is not None
        for message in self.session.messages_to_send():
            if self.transport.is_stateless_cancel(message):
                # 2026-07-28 over HTTP: closing the request's stream is the cancellation.
                scope = self._posts.get(message["params"]["requestId"])
                if scope is not None:
                    scope.cancel()
                continue
            self._nursery.start_soon(self._post, message, self._order.ticket())

    async def _open(self) -> trio.abc.Stream:
        endpoint = self.transport.endpoint
        stream: trio.abc.Stream = await trio.open_tcp_stream(endpoint.host, endpoint.port)
        if endpoint.scheme == "https":
            context = self.ssl_context or ssl.create_default_context()
            stream = trio.SSLStream(stream, context, server_hostname=endpoint.host)
        return stream

    async def _exchange(
        self,
        method: str,
        headers: dict[str, str],
        body: bytes | None,
        message: Any,
        ticket: int | None = None,
        *,
        turn_ends_at_head: bool = False,
    ) -> ResponseHandler:
        """One HTTP request; what the answer means goes through a core :class:`ResponseHandler`.
        With a ``ticket`` (:class:`SendOrder`) it is sent only after those queued before it."""
        response = ResponseHandler(self.transport, message, max_body=self.max_body)
        trip = RoundTrip(self.pool, self.transport.endpoint, response, method, headers, body)
        await self._round_trip(trip, ticket, turn_ends_at_head=turn_ends_at_head)
        self._after_input()
        return response

    async def _round_trip(
        self,
        trip: RoundTrip[trio.abc.Stream],
        ticket: int | None = None,
        *,
        turn_ends_at_head: bool = False,
    ) -> None:
        if ticket is not None:
            # In queue order from here on, so that which request gets the idle
            # connection (the one a server reads soonest) follows the order too.
            await self._turn(ticket)
        while trip.attempt():
            conn = trip.idle_connection()
            if conn is None:
                try:
                    conn = trip.connected(await self._open())
                except OSError as exc:
                    trip.cannot_connect(str(exc))
                    return
            try:
                await conn.stream.send_all(trip.request_bytes())
                while True:
                    if ticket is not None and (
                        not turn_ends_at_head or trip.response.head is not None
                    ):
                        self._order.done(ticket)
                        ticket = None
                    if trip.done:
                        break
                    data = await conn.stream.receive_some(_READ_SIZE)
                    if trip.feed(data):
                        self._after_input()
                    if data and not trip.done:
                        _ack_now(conn.stream)
            except (OSError, trio.BrokenResourceError) as exc:
                trip.broken(f"the connection failed: {exc}")
            finally:
                if not trip.release():
                    await trio.aclose_forcefully(conn.stream)

    async def _turn(self, ticket: int) -> None:
        signal = self._order.turn(ticket)
        if signal is not None:
            await signal.wait()

    def _after_input(self) -> None:
        self.driver.process_events()
        self._send_queued()
        if self.transport.wants_get_stream and not self._get_running:
            self._get_running = True
            assert self._nursery is not None
            ticket = self._order.ticket()
            self._nursery.start_soon(self._get_stream, ticket)
            self._nursery.start_soon(self._end_turn_later, ticket)

    async def _end_turn_later(self, ticket: int) -> None:
        """A server that holds back the GET stream's head must not hold up every request."""
        await trio.sleep(GET_STREAM_HEAD_WAIT)
        self._order.done(ticket)

    async def _post(self, message: Any, ticket: int) -> None:
        request_id = message.get("id") if isinstance(message, dict) else None
        with trio.CancelScope() as scope:
            if request_id is not None:
                self._posts[request_id] = scope
            try:
                body = _json.dumps(message).encode("utf-8")
                headers = self.transport.post_headers(message)
                response = await self._exchange("POST", headers, body, message, ticket)
                # SEP-1699: a stream that ended before its answer is resumed with a GET.
                last_event_id = None
                while (last_event_id := response.resume_from(last_event_id)) is not None:
                    await trio.sleep(self.transport.retry_delay)
                    headers = self.transport.resume_headers(last_event_id)
                    response = await self._exchange("GET", headers, None, message)
            finally:
                self._order.done(ticket)
                if request_id is not None:
                    self._posts.pop(request_id, None)

    async def _get_stream(self, ticket: int) -> None:
        """Hold the GET stream open for server-initiated messages; reconnect on drops."""
        failures: int | None = 0
        first: int | None = ticket
        try:
            while failures is not None and self.transport.wants_get_stream:
                if self.driver.closed:
                    return
                headers = self.transport.get_headers()
                response = await self._exchange(
                    "GET", headers, None, None, first, turn_ends_at_head=True
                )
                first = None
                self._order.done(ticket)
                failures = self.transport.after_get_stream(response.status, failures)
                if failures is not None:
                    await trio.sleep(self.transport.retry_delay)
        finally:
            self._order.done(ticket)

    async def end_session(self) -> None:
        """DELETE the handshake session, politely (servers may answer 405)."""
        headers = self.transport.delete_headers()
        if headers is None:
            return
        response = ResponseHandler(self.transport, None, max_body=self.max_body)
        ticket = self._order.ticket()
        with trio.move_on_after(2):
            trip = RoundTrip(self.pool, self.transport.endpoint, response, "DELETE", headers, None)
            await self._round_trip(trip, ticket)
        self._order.done(ticket)


@asynccontextmanager
async def open_http_client(
    url: str,
    *,
    handlers: ClientHandlers | None = None,
    client_info: dict[str, Any] | None = None,
    protocol_version: str | None = None,
    mode: str = "auto",
    supported_versions: Sequence[str] = ALL_REVISIONS,
    headers: dict[str, str] | None = None,
    initialize_timeout: float | None = 30.0,
    max_input_rounds: int = 10,
    max_body: int = 16 * 1024 * 1024,
    ssl_context: ssl.SSLContext | None = None,
) -> AsyncIterator[Client]:
    """Connect to a Streamable HTTP endpoint and yield a :class:`Client`.

    HTTP failures become typed errors of the request that met them:
    :class:`sansio_mcp.HTTPStatusError` (with ``data.status``), or
    :class:`sansio_mcp.ConnectionClosedError` when the server ended the session.
    """
    handlers = handlers or ClientHandlers()
    endpoint = Endpoint.parse(url)
    session = new_client_session(
        handlers,
        client_info=client_info,
        supported_versions=supported_versions,
        protocol_version=protocol_version,
        mode=mode,
        max_input_rounds=max_input_rounds,
    )
    transport = StreamableHTTPClient(endpoint, session, headers=headers)
    host = _HTTPClientHost(session, transport, handlers, max_body=max_body, ssl_context=ssl_context)
    with unwrap_single_exception():
        async with trio.open_nursery() as nursery:
            host.attach(nursery)
            try:
                client = await start_client(host, session, handlers, initialize_timeout)
                yield client
                with trio.CancelScope(shield=True):
                    await host.end_session()
            finally:
                session.close()
                host.driver.process_events()
                nursery.cancel_scope.cancel()
