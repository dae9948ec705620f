"""The asyncio MCP client over Streamable HTTP: ``open_http_client(url)``
(same semantics as :mod:`trio_adapters.http_client`)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

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

from ._runner import AsyncioSessionHost, read_in_small_chunks, shielded
from .client import Client, run_client

__all__ = ["open_http_client"]

_READ_SIZE = 65536
_QUICKACK: int | None = getattr(socket, "TCP_QUICKACK", None)


def _ack_now(writer: asyncio.StreamWriter) -> None:
    """Acknowledge what arrived at once: on a kept-alive connection Linux delays
    ACKs, and a server that holds its next write until the last one is ACKed
    (Nagle) would stall each answer 40 ms between its head and its body."""
    sock = writer.get_extra_info("socket")
    if _QUICKACK is not None and sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, _QUICKACK, 1)


_Stream = tuple[asyncio.StreamReader, asyncio.StreamWriter]


class _HTTPClientHost(AsyncioSessionHost):
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
        self.pool: ConnectionPool[_Stream] = ConnectionPool()
        self._get_running = False
        self._order = SendOrder(self.new_signal)
        # The POSTs in flight, by the JSON-RPC id they carry.
        self._posts: dict[Any, asyncio.Task[Any]] = {}

    def attach(self, group: asyncio.TaskGroup) -> None:
        super().attach(group)
        self.start(self._hold_connections())

    async def _hold_connections(self) -> None:
        """Live as long as the host: its end closes the idle kept-alive connections."""
        try:
            await asyncio.get_running_loop().create_future()
        finally:
            for _, writer in self.pool.close():
                writer.close()

    def _schedule_flush(self) -> None:
        # Sending only starts tasks, so it needs no task of its own.
        self._send_queued()

    async def flush(self) -> None:
        self._send_queued()

    def _send_queued(self) -> None:
        for message in self.session.messages_to_send():
            if self.transport.is_stateless_cancel(message):
                # 2026-07-28 over HTTP: closing the request's stream is the cancellation.
                task = self._posts.get(message["params"]["requestId"])
                if task is not None:
                    task.cancel()
                continue
            task = self.start(self._post(message, self._order.ticket()))
            request_id = message.get("id") if isinstance(message, dict) else None
            if request_id is not None:
                self._posts[request_id] = task
                task.add_done_callback(self._forget_post(request_id))

    def _forget_post(self, request_id: Any) -> Callable[[asyncio.Task[Any]], None]:
        def forget(_: asyncio.Task[Any]) -> None:
            self._posts.pop(request_id, None)

        return forget

    async def _open(self) -> _Stream:
        endpoint = self.transport.endpoint
        context = None
        if endpoint.scheme == "https":
            context = self.ssl_context or ssl.create_default_context()
        reader, writer = await asyncio.open_connection(endpoint.host, endpoint.port, ssl=context)
        read_in_small_chunks(writer.transport)
        return reader, writer

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
        trip: RoundTrip[_Stream],
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
            reader, writer = conn.stream
            try:
                writer.write(trip.request_bytes())
                await writer.drain()
                while True:
                    if ticket is not None and (
                        not turn_ends_at_head or trip.response.head is not None
                    ):
                        self._order.done(ticket)
                        ticket = None
                    if trip.done:
                        break
                    data = await reader.read(_READ_SIZE)
                    if trip.feed(data):
                        self._after_input()
                    if data and not trip.done:
                        _ack_now(writer)
            except OSError as exc:
                trip.broken(f"the connection failed: {exc}")
            finally:
                if not trip.release():
                    writer.close()

    async def _turn(self, ticket: int) -> None:
        signal = self._order.turn(ticket)
        if signal is not None:
            await signal.wait()

    def _after_input(self) -> None:
        self.driver.process_events()
        self._send_queued()
        if self.transport.wants_get_stream and not self._get_running:
            self._get_running = True
            ticket = self._order.ticket()
            self.start(self._get_stream(ticket))
            # A server that holds back the GET stream's head must not hold up every request.
            asyncio.get_running_loop().call_later(GET_STREAM_HEAD_WAIT, self._order.done, ticket)

    async def _post(self, message: Any, ticket: int) -> None:
        try:
            body = _json.dumps(message).encode("utf-8")
            headers = self.transport.post_headers(message)
            response = await self._exchange("POST", headers, body, message, ticket)
            # SEP-1699: a stream that ended before its answer is resumed with a GET.
            last_event_id = None
            while (last_event_id := response.resume_from(last_event_id)) is not None:
                await asyncio.sleep(self.transport.retry_delay)
                headers = self.transport.resume_headers(last_event_id)
                response = await self._exchange("GET", headers, None, message)
        finally:
            self._order.done(ticket)

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
                    await asyncio.sleep(self.transport.retry_delay)
        finally:
            self._order.done(ticket)

    async def end_session(self) -> None:
        """DELETE the handshake session, politely (servers may answer 405)."""
        headers = self.transport.delete_headers()
        if headers is None:
            return
        response = ResponseHandler(self.transport, None, max_body=self.max_body)
        ticket = self._order.ticket()
        trip = RoundTrip(self.pool, self.transport.endpoint, response, "DELETE", headers, None)
        try:
            async with asyncio.timeout(2):
                await self._round_trip(trip, ticket)
        except TimeoutError:
            pass
        finally:
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
    """Connect to a Streamable HTTP endpoint and yield a :class:`Client`."""
    handlers = handlers or ClientHandlers()
    session = new_client_session(
        handlers,
        client_info=client_info,
        supported_versions=supported_versions,
        protocol_version=protocol_version,
        mode=mode,
        max_input_rounds=max_input_rounds,
    )
    transport = StreamableHTTPClient(Endpoint.parse(url), session, headers=headers)
    host = _HTTPClientHost(session, transport, handlers, max_body=max_body, ssl_context=ssl_context)
    async with run_client(host, session, handlers, initialize_timeout) as client:
        yield client
        await shielded(host.end_session)
