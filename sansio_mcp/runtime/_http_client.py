"""The Streamable HTTP client's loops, written once for every backend.

Every queued message goes out as its own POST, in its own task, on a
kept-alive connection when one is idle (:class:`~sansio_mcp._http.ConnectionPool`),
in the order it was queued (:class:`SendOrder`).  Here live the policies: a
stream that ended before its answer is resumed with GETs (SEP-1699), the GET
stream for server-initiated messages reconnects when it drops, and on
2026-07-28 closing a request's stream is its cancellation.  What an answer
means is decided by the core's :class:`ResponseHandler`.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from .._client_session import ClientSession
from .._errors import MCPError
from .._http import HTTPClientConnection, HTTPResponseHead
from .._http_pool import ConnectionPool
from .._legacy_sse import LegacySSEStream
from .._ndjson import NEED_DATA
from .._outbox import Outgoing
from .._session import Session
from .._streamable_http_client import (
    Endpoint,
    ResponseHandler,
    RoundTrip,
    SendOrder,
    StreamableHTTPClient,
)
from ._backend import Backend, ByteStream, Cancellable, Signal
from ._client import ClientHandlers
from ._driver import Driver

if TYPE_CHECKING:
    from ._oauth import OAuthProvider

__all__ = ["HTTPClientHost", "LegacySSEClientHost"]

_READ_SIZE = 65536
#: How many times one request is sent at most while authorization goes on
#: (a DPoP nonce, a flow, a step-up, another nonce...).
_AUTH_ROUNDS = 6


class HTTPClientHost:
    """Mixed into the session host (before it): it is the host's output (sending
    starts tasks instead of writing); the host supplies :attr:`backend`,
    :meth:`spawn_task` and :meth:`start_cancellable`; its ``attach`` also spawns
    :meth:`hold_connections`."""

    if TYPE_CHECKING:
        # What the session host provides (declared only: a definition here would
        # shadow the host's, which comes after this class in the MRO).
        backend: Backend
        session: Session
        driver: Driver

        def new_signal(self) -> Signal: ...

        def spawn_task(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
            """Run ``fn(*args)`` in a task of the host's group."""

        def start_cancellable(
            self, fn: Callable[[], Awaitable[Any]], on_done: Callable[[], None] | None = None
        ) -> Cancellable:
            """Run ``fn()`` in a task of the host's group that ``cancel()`` ends."""

    # Set up -------------------------------------------------------------------------

    def __init__(
        self,
        session: ClientSession,
        transport: StreamableHTTPClient,
        handlers: ClientHandlers,
        *,
        max_body: int,
        ssl_context: Any,
        auth: OAuthProvider | None = None,
    ) -> None:
        # The session host's constructor (next in the MRO), with the handlers' callbacks,
        # this being its output.
        super().__init__(  # type: ignore[call-arg]
            session, output=self, **handlers.host_callbacks()
        )
        self.setup_http(transport, max_body=max_body, ssl_context=ssl_context, auth=auth)

    def setup_http(
        self,
        transport: StreamableHTTPClient,
        *,
        max_body: int,
        ssl_context: Any,
        auth: OAuthProvider | None = None,
    ) -> None:
        """``ssl_context`` (an :class:`ssl.SSLContext` or None) is for ``https`` URLs;
        ``auth`` authorizes the requests (OAuth 2.1)."""
        self.transport = transport
        self.auth = auth
        if auth is not None:
            auth.bind(self.backend, transport.endpoint.url, ssl_context)
            transport.holds_auth_failures = True
        self.max_body = max_body
        self.ssl_context = ssl_context
        self.pool: ConnectionPool[ByteStream] = ConnectionPool()
        self._get_running = False
        self._order: SendOrder[Signal] = SendOrder(self.new_signal)
        # The POSTs in flight, by the JSON-RPC id they carry.
        self._posts: dict[Any, Cancellable] = {}

    async def hold_connections(self) -> None:
        """Live as long as the host: its end closes the idle kept-alive connections."""
        try:
            await self.backend.sleep(math.inf)
        finally:
            for stream in self.pool.close():
                await stream.aclose()

    # Sending ------------------------------------------------------------------------

    #: Sending only starts tasks, so it needs no flusher task of its own.
    flusher = None

    def schedule(self) -> None:
        self._send_queued()

    def send_now(self) -> bool:
        self._send_queued()
        return True

    async def flush(self) -> None:
        self._send_queued()

    def _send_queued(self) -> None:
        for item in self.session.outgoing_to_send():
            message = item.message
            if self._cancels_by_closing_stream(message):
                # 2026-07-28 over HTTP: closing the request's stream is the cancellation.
                post = self._posts.get(message["params"]["requestId"])
                if post is not None:
                    post.cancel()
                continue
            ticket = self._order.ticket()
            request_id = message.get("id") if isinstance(message, dict) else None

            handle = self.start_cancellable(partial(self._post, item, ticket))
            if request_id is not None:
                self._posts[request_id] = handle

    def _cancels_by_closing_stream(self, message: Any) -> bool:
        return self.transport.is_stateless_cancel(message)

    async def _open(self) -> ByteStream:
        endpoint = self.transport.endpoint
        return await self.backend.open_tcp_stream(
            endpoint.host,
            endpoint.port,
            tls=endpoint.scheme == "https",
            ssl_context=self.ssl_context,
        )

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
        With a ``ticket`` (:class:`SendOrder`) it is sent only after those queued before it.
        With ``auth``, the request carries its token, and a 401/403 runs the
        authorization the provider decides on before the request is sent again."""
        for round_ in range(_AUTH_ROUNDS):
            sent, generation = headers, 0
            if self.auth is not None:
                extra, generation = await self.auth.headers(method, self.transport.endpoint.url)
                sent = {**headers, **extra}
            response = ResponseHandler(self.transport, message, max_body=self.max_body)
            trip = RoundTrip(self.pool, self.transport.endpoint, response, method, sent, body)
            await self._round_trip(trip, ticket, turn_ends_at_head=turn_ends_at_head)
            ticket = None
            if self.auth is not None and response.head is not None:
                verdict = await self.auth.after_response(
                    response.status,
                    dict(response.head.headers),
                    generation,
                    "authorization" in sent,
                )
                if verdict is True and response.held and round_ < _AUTH_ROUNDS - 1:
                    continue
                response.release(verdict if isinstance(verdict, MCPError) else None)
            break
        self._after_input()
        return response

    async def _round_trip(
        self,
        trip: RoundTrip[ByteStream],
        ticket: int | None = None,
        *,
        turn_ends_at_head: bool = False,
    ) -> None:
        if ticket is not None:
            # In queue order from here on, so that which request gets the idle
            # connection (the one a server reads soonest) follows the order too.
            signal = self._order.turn(ticket)
            if signal is not None:
                await signal.wait()
        head_ticket = ticket if turn_ends_at_head else None
        while trip.attempt():
            conn = trip.idle_connection()
            if conn is None:
                try:
                    conn = trip.connected(await self._open())
                except OSError as exc:
                    trip.cannot_connect(str(exc))
                    return
            stream = conn.stream
            try:
                await stream.send_all(trip.request_bytes())
                if head_ticket is not None and ticket is not None:
                    # The head's wait counts from here: the GET's own wait for its turn
                    # and connection under load must not use it up.
                    self.spawn_task(self._end_turn_later, head_ticket)
                    head_ticket = None
                while True:
                    if ticket is not None and (
                        not turn_ends_at_head or trip.response.head is not None
                    ):
                        self._order.done(ticket)
                        ticket = None
                    if trip.done:
                        break
                    data = await stream.receive_some(_READ_SIZE)
                    if trip.feed(data):
                        self._after_input()
            except OSError as exc:
                trip.broken(f"the connection failed: {exc}")
            finally:
                if not trip.release():
                    await stream.aclose()

    def _after_input(self) -> None:
        self.driver.process_events()
        self._send_queued()
        if self.transport.wants_get_stream and not self._get_running:
            self._get_running = True
            self.spawn_task(self._get_stream, self._order.ticket())

    async def _end_turn_later(self, ticket: int) -> None:
        """A server that holds back the GET stream's head must not hold up every request."""
        await self.backend.sleep(self.transport.get_stream_head_wait)
        self._order.done(ticket)

    async def _post(self, item: Outgoing, ticket: int) -> None:
        message = item.message
        request_id = message.get("id") if isinstance(message, dict) else None
        try:
            headers = self.transport.post_headers(message)
            response = await self._exchange("POST", headers, item.data, message, ticket)
            # SEP-1699: a stream that ended before its answer is resumed with a GET.
            last_event_id = None
            while (last_event_id := response.resume_from(last_event_id)) is not None:
                await self.backend.sleep(self.transport.retry_delay)
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
                if not self.driver.closed:
                    self.driver.on_trouble()  # the server may be gone: nothing else says so
                failures = self.transport.after_get_stream(response.status, failures)
                if failures is not None:
                    await self.backend.sleep(self.transport.retry_delay)
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
            async with self.backend.move_on_after(2):
                await self._round_trip(trip, ticket)
        finally:
            self._order.done(ticket)


class LegacySSEClientHost(HTTPClientHost):
    """The legacy HTTP+SSE client (2024-11-05): messages go out as POSTs to the
    endpoint the GET stream named; answers come on that stream."""

    def _after_input(self) -> None:
        self.driver.process_events()
        self._send_queued()

    def _cancels_by_closing_stream(self, message: Any) -> bool:
        # Every answer comes on the one GET stream, so a request has no stream of its
        # own to close: 2026-07-28 cancels with notifications/cancelled here, as on stdio.
        return False

    async def run_stream(self, url: str, endpoint_ready: Signal) -> None:
        """Read the GET stream until it ends; learn the POST endpoint from it first.
        ``endpoint_ready`` is set once it is known, or the stream ended without it."""
        source = Endpoint.parse(url)
        legacy = LegacySSEStream(url, self.transport)
        for round_ in range(_AUTH_ROUNDS):
            if not await self._read_stream(source, legacy, endpoint_ready, round_):
                break
        # An error above leaves as itself (it ends the client); an ended stream ends the session.
        self.session.close()
        self.driver.process_events()
        endpoint_ready.set()  # (the opener sees the session closed: no endpoint came)

    async def _read_stream(
        self, source: Endpoint, legacy: LegacySSEStream, endpoint_ready: Signal, round_: int
    ) -> bool:
        """One GET of the stream, read to its end; True when authorization asks for
        another (the server refused the token, and a flow got a new one)."""
        headers, generation = legacy.request_headers(), 0
        if self.auth is not None:
            extra, generation = await self.auth.headers("GET", source.url)
            headers = {**headers, **extra}
        # A failure to connect leaves as itself (the opener sees it, not a closed session).
        stream = await self.backend.open_tcp_stream(
            source.host, source.port, tls=source.scheme == "https", ssl_context=self.ssl_context
        )
        try:
            conn = HTTPClientConnection(source.host_header)
            await stream.send_all(conn.send_request("GET", source.target, headers))
            while True:
                event = conn.next_event()
                if event is NEED_DATA:
                    data = await stream.receive_some(_READ_SIZE)
                    conn.receive_data(data)
                    if not data:
                        break
                elif isinstance(event, HTTPResponseHead):
                    if self.auth is not None and event.status in (401, 403):
                        verdict = await self.auth.after_response(
                            event.status,
                            dict(event.headers),
                            generation,
                            "authorization" in headers,
                        )
                        if verdict is True and round_ < _AUTH_ROUNDS - 1:
                            return True
                        if isinstance(verdict, MCPError):
                            raise verdict  # the opener fails with why, not "stream ended"
                    legacy.on_head(event)
                elif isinstance(event, bytes):
                    if legacy.on_body(event):
                        self._after_input()
                    if legacy.endpoint_known:
                        endpoint_ready.set()
                else:
                    break
        finally:
            await stream.aclose()
        return False
