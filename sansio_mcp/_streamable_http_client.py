"""The Streamable HTTP transport, client side, as pure decisions: which
request carries a message, and what a response means for the session.

The adapter opens connections and moves bytes; :class:`StreamableHTTPClient`
says what to send and feeds what came back into the :class:`ClientSession`,
turning HTTP failures into typed errors for the request they belong to.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar
from urllib.parse import urlsplit

import attrs

from . import _json
from ._bounds import seconds
from ._client_session import ClientSession
from ._errors import ConnectionClosedError, HTTPStatusError, MCPError, RemoteProtocolError
from ._http import HTTPError, HTTPResponseHead, media_types
from ._http_headers import request_headers, x_mcp_header_problems
from ._http_pool import ConnectionPool, PooledConnection
from ._jsonrpc import RequestId, is_request_id
from ._ndjson import NEED_DATA
from ._sse import SSEParser
from ._state import SessionState
from ._stateless import is_stateless_request
from ._versions import Era

logger = logging.getLogger("sansio_mcp.http")

#: Failed GET stream attempts in a row after which a client stops reconnecting.
_GET_STREAM_FAILURES = 5

__all__ = [
    "Endpoint",
    "StreamableHTTPClient",
    "ResponseReader",
    "ResponseHandler",
    "RoundTrip",
    "SendOrder",
    "GET_STREAM_HEAD_WAIT",
]

S = TypeVar("S")


@attrs.frozen
class Endpoint:
    """Where an MCP endpoint lives."""

    scheme: str
    host: str
    port: int
    target: str

    @classmethod
    def parse(cls, url: str) -> Endpoint:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        target = parts.path or "/"
        if parts.query:
            target += "?" + parts.query
        return cls(parts.scheme, parts.hostname, port, target)

    @property
    def host_header(self) -> str:
        default = 443 if self.scheme == "https" else 80
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == default else f"{host}:{self.port}"

    @property
    def origin(self) -> str:
        """What a kept-alive connection is good for: scheme, host and port."""
        return f"{self.scheme}://{self.host_header}"

    @property
    def url(self) -> str:
        return self.origin + self.target


@attrs.frozen
class Unreadable:
    """An SSE event whose data is no JSON we take, and why (see ``deliver``)."""

    data: bytes
    error: RemoteProtocolError = attrs.field(eq=False)


class ResponseReader:
    """Reads one HTTP response (JSON or SSE) into JSON-RPC messages."""

    def __init__(self, head: HTTPResponseHead, *, max_body: int) -> None:
        self.head = head
        types = media_types(head.headers.get("content-type"))
        self.is_sse = "text/event-stream" in types
        self.is_json = "application/json" in types
        self.max_body = max_body
        self._body = bytearray()
        # An event carries one whole message: the stream's limits are the body's.
        self.sse = (
            SSEParser(max_line_size=max_body, max_event_size=max_body) if self.is_sse else None
        )

    def feed(self, chunk: bytes) -> list[Any]:
        """Messages complete so far (SSE), or none until the end (JSON)."""
        if self.sse is not None:
            self.sse.feed(chunk)
            out = []
            while (event := self.sse.next_event()) is not NEED_DATA:
                assert not isinstance(event, type)
                if event.event == "message" and event.data.strip():
                    try:
                        out.append(_json.loads(event.data))
                    except RemoteProtocolError as exc:
                        out.append(Unreadable(event.data.encode("utf-8", "surrogatepass"), exc))
            return out
        self._body += chunk
        if len(self._body) > self.max_body:
            raise RemoteProtocolError(f"response body over {self.max_body} bytes")
        return []

    def finish(self) -> list[Any]:
        """Messages of a JSON body (at the end of the response)."""
        if self.sse is not None:
            self.sse.feed(b"")
            return []
        if not self._body.strip():
            return []
        value = _json.loads(bytes(self._body))
        return value if isinstance(value, list) else [value]

    @property
    def body(self) -> bytes:
        """The body so far (a JSON response's)."""
        return bytes(self._body)

    @property
    def body_text(self) -> str:
        return bytes(self._body[:500]).decode("utf-8", "replace")


class StreamableHTTPClient:
    """Client-side transport decisions for one MCP endpoint."""

    def __init__(
        self, endpoint: Endpoint, session: ClientSession, *, headers: dict[str, str] | None = None
    ) -> None:
        self.endpoint = endpoint
        self.session = session
        self.extra_headers = dict(headers or {})
        #: ``Mcp-Session-Id`` of a handshake session, once the server issued one.
        self.session_id: str | None = None
        #: ``Last-Event-ID`` of the GET stream, for resumption.
        self.last_event_id: str | None = None
        #: The server's ``retry`` hint for the GET stream, in seconds.
        self.retry_delay = 1.0
        self.get_stream_head_wait = GET_STREAM_HEAD_WAIT
        #: Input schemas of the tools the server listed (those with valid
        #: ``x-mcp-header`` annotations), for the ``Mcp-Param-*`` headers of their calls.
        self.tool_schemas: dict[str, Any] = {}
        self._tools_list_ids: set[Any] = set()
        #: Whether 401 and 403 answers wait for the client's authorization to judge
        #: them (:meth:`ResponseHandler.release`) instead of failing their request.
        self.holds_auth_failures = False

    def post_headers(self, message: dict[str, Any]) -> dict[str, str]:
        headers = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            **self.extra_headers,
        }
        params = message.get("params")
        if isinstance(params, dict) and is_stateless_request(params):
            # Stateless: the headers mirror the body, and there is no session.
            method = message.get("method")
            if method == "tools/list" and is_request_id(message.get("id")):
                self._tools_list_ids.add(message["id"])
            name = params.get("name")
            schema = (
                self.tool_schemas.get(name)
                if method == "tools/call" and isinstance(name, str)
                else None
            )
            mirrored = request_headers(message, input_schema=schema)
            headers.update({k.lower(): v for k, v in mirrored.items()})
            return headers
        if self.session.revision is not None and self.session.revision.era is Era.HANDSHAKE:
            headers["mcp-protocol-version"] = self.session.revision.name
        if self.session_id is not None:
            headers["mcp-session-id"] = self.session_id
        return headers

    def resume_headers(self, last_event_id: str) -> dict[str, str]:
        """Headers of the GET that resumes a POST's SSE stream after ``last_event_id``."""
        return {**self.get_headers(), "last-event-id": last_event_id}

    def get_headers(self) -> dict[str, str]:
        headers = {"accept": "text/event-stream", **self.extra_headers}
        if self.session_id is not None:
            headers["mcp-session-id"] = self.session_id
        if self.session.revision is not None:
            headers["mcp-protocol-version"] = self.session.revision.name
        if self.last_event_id is not None:
            headers["last-event-id"] = self.last_event_id
        return headers

    def delete_headers(self) -> dict[str, str] | None:
        """Headers of the DELETE that ends a handshake session, or None if there is none."""
        if self.session_id is None:
            return None
        return {"mcp-session-id": self.session_id, **self.extra_headers}

    def is_stateless_cancel(self, message: Any) -> bool:
        """A 2026-07-28 cancellation, which over HTTP is closing the request's stream
        (never a POST)."""
        return (
            self.session.is_stateless
            and isinstance(message, dict)
            and message.get("method") == "notifications/cancelled"
            and isinstance(message.get("params"), dict)
        )

    def after_get_stream(self, status: int, failures: int) -> int | None:
        """The GET stream ended with ``status`` (0: no answer) after ``failures``
        failed attempts in a row: the new count, the client reconnecting after
        :attr:`retry_delay`, or None when it should stop holding one (the server
        has none, the session ended, or it kept failing)."""
        if status in (405, 404, 400):
            return None
        failures = 0 if status == 200 else failures + 1
        if failures > _GET_STREAM_FAILURES:
            logger.warning("giving up on the GET stream after %d failures", failures)
            return None
        return failures

    @property
    def get_stream_head_wait(self) -> float:
        """Seconds later requests wait for the GET stream's response head, from when
        the GET went out (settable; finite and at least 0; see
        :data:`GET_STREAM_HEAD_WAIT`)."""
        return self._get_stream_head_wait

    @get_stream_head_wait.setter
    def get_stream_head_wait(self, value: float) -> None:
        if not seconds(value):
            raise ValueError(
                "get_stream_head_wait must be a finite number of seconds of at least 0,"
                f" not {value!r}"
            )
        self._get_stream_head_wait = float(value)

    @property
    def wants_get_stream(self) -> bool:
        """A handshake session may receive server-initiated messages on a GET stream."""
        return self.session.state is SessionState.READY and self.session_id is not None

    def on_head(self, message: Any, head: HTTPResponseHead) -> None:
        """Note what a POST's response head says (the session id on initialize)."""
        if isinstance(message, dict) and message.get("method") == "initialize":
            session_id = head.headers.get("mcp-session-id")
            if session_id and head.status == 200:
                self.session_id = session_id

    def deliver(self, messages: list[Any], carrier: Any = None) -> None:
        """Feed the session what came on the response to ``carrier`` (the message a
        POST carried; None: the GET stream): a server request then says which of
        our requests it came with, if any."""
        carried = carrier.get("id") if isinstance(carrier, dict) and "method" in carrier else None
        related = carried if is_request_id(carried) else None
        for obj in messages:
            if isinstance(obj, Unreadable):
                # The answer to a request of ours ends it, precisely; anything else
                # unreadable breaks the stream, as before.
                if not self.session.end_unreadable_answer(obj.data, obj.error):
                    raise obj.error
                continue
            response_id = obj.get("id") if isinstance(obj, dict) else None
            if is_request_id(response_id) and response_id in self._tools_list_ids:
                self._tools_list_ids.discard(response_id)
                self._note_tools(obj.get("result"))
            self.session.receive_message(obj, relation_known=True, related_request=related)

    def _note_tools(self, result: Any) -> None:
        """Remember the listed tools' schemas (SEP-2243: never those with invalid
        ``x-mcp-header`` annotations, which clients must not use)."""
        tools = result.get("tools") if isinstance(result, dict) else None
        for tool in tools if isinstance(tools, list) else ():
            name = tool.get("name") if isinstance(tool, dict) else None
            if not isinstance(name, str):
                continue
            schema = tool.get("inputSchema")
            if x_mcp_header_problems(schema):
                self.tool_schemas.pop(name, None)
            else:
                self.tool_schemas[name] = schema

    def fail(self, message: Any, status: int, detail: str) -> None:
        """Turn a failed POST into an error for the request it carried."""
        if not self._waiting(message):
            return
        data = {"status": status, "body": detail}
        error: MCPError
        if status == 404 and self.session_id is not None:
            self.session_id = None
            error = ConnectionClosedError(
                message="the server ended the session (HTTP 404)", data=data
            )
        else:
            error = HTTPStatusError(message=f"HTTP {status}: {detail}".strip(), data=data)
        self.fail_with(message, error)

    def fail_with(self, message: Any, error: MCPError) -> None:
        """Fail the request a POST carried with ``error`` (if it is still waiting)."""
        if self._waiting(message):
            self.session.fail_request(message["id"], error)

    def _waiting(self, message: Any) -> bool:
        """Whether ``message`` is a request of ours still waiting for its answer."""
        return (
            isinstance(message, dict)
            and "method" in message
            and is_request_id(message.get("id"))
            and message["id"] in self._wire_ids()
        )

    def _wire_ids(self) -> frozenset[RequestId]:
        return self.session._requests.wire_ids()


class ResponseHandler:
    """What one HTTP response (to a POST, or the GET stream) means for the session.

    The adapter feeds it the response head, body chunks and the end; it
    delivers JSON-RPC messages as they complete, turns failures into errors
    of the request the POST carried, and tracks the GET stream's
    ``Last-Event-ID`` and ``retry`` hint.  ``message`` is None for the GET
    stream.
    """

    def __init__(self, transport: StreamableHTTPClient, message: Any, *, max_body: int) -> None:
        self.transport = transport
        self.message = message
        self.max_body = max_body
        self.head: HTTPResponseHead | None = None
        self.reader: ResponseReader | None = None
        #: The last SSE event id this response carried.
        self.last_event_id: str | None = None
        #: A 401 or 403 waiting for the client's authorization (see :meth:`release`).
        self.held = False
        self._held_body = bytearray()

    @property
    def status(self) -> int:
        return self.head.status if self.head is not None else 0

    @property
    def needs_resume(self) -> bool:
        """Whether this response was an SSE stream of a handshake session that ended
        before answering its request: the client resumes it with a GET carrying
        ``Last-Event-ID`` after the ``retry`` delay (SEP-1699)."""
        request_id = self.message.get("id") if isinstance(self.message, dict) else None
        return (
            self.status == 200
            and self.reader is not None
            and self.reader.is_sse
            and not self.transport.session.is_stateless
            and is_request_id(request_id)
            and request_id in self.transport._wire_ids()
        )

    @property
    def stops_at_head(self) -> bool:
        """A refused GET stream: its body is not for us (and its connection is not reused)."""
        return self.message is None and self.status != 200

    def resume_from(self, earlier: str | None) -> str | None:
        """The ``Last-Event-ID`` to resume this POST's stream from with a GET, after
        the ``retry`` delay (SEP-1699), or None if it needs no resuming (or cannot
        be: no event id came, here or on ``earlier`` attempts)."""
        if not self.needs_resume:
            return None
        return self.last_event_id or earlier

    def on_head(self, head: HTTPResponseHead) -> None:
        self.head = head
        self.held = self.transport.holds_auth_failures and head.status in (401, 403)
        if self.message is not None:
            self.transport.on_head(self.message, head)
        self.reader = ResponseReader(head, max_body=self.max_body)

    def on_body(self, chunk: bytes) -> bool:
        """Feed body bytes; True when messages reached the session."""
        assert self.reader is not None
        if self.held:
            if len(self._held_body) < self.max_body:
                self._held_body += chunk
            return False
        if self.message is None and self.status != 200:
            return False
        messages = self.reader.feed(chunk)
        sse = self.reader.sse
        if sse is not None:
            if sse.last_event_id is not None:
                self.last_event_id = sse.last_event_id
            if self.message is None and sse.last_event_id is not None:
                self.transport.last_event_id = sse.last_event_id
            if sse.retry is not None:
                self.transport.retry_delay = sse.retry / 1000
        if messages:
            self.transport.deliver(messages, self.message)
        return bool(messages)

    def on_end(self) -> None:
        """The response ended: deliver a JSON body, or fail the request it answered."""
        head, reader = self.head, self.reader
        if head is None or reader is None:
            self.on_failure("the server closed the connection without answering")
            return
        if self.held:
            return
        if self.message is None:
            return
        if head.status >= 400 and not reader.is_sse:
            try:
                messages = reader.finish()
            except RemoteProtocolError:
                messages = []
            if messages and all(isinstance(m, dict) and "jsonrpc" in m for m in messages):
                # A JSON-RPC error: the session decides (only one naming a request).
                answers = [m for m in messages if is_request_id(m.get("id"))]
                self.transport.deliver(answers, self.message)
            # A request the body did not answer (an id-less error, e.g. a handshake-era server
            # refusing server/discover) fails with the HTTP status; no-op once answered.
            self.transport.fail(self.message, head.status, reader.body_text)
            return
        if head.status < 300 and not (reader.is_json or reader.is_sse):
            return  # 202 Accepted, or a body that is not for us
        try:
            messages = reader.finish()
        except RemoteProtocolError as exc:
            # An answer to a request of ours ends it, precisely; else the POST fails.
            self.transport.session.end_unreadable_answer(reader.body, exc)
            self.transport.fail(self.message, head.status, f"unreadable body: {exc.message}")
            return
        if messages:
            self.transport.deliver(messages, self.message)
        elif head.status >= 300:
            self.transport.fail(self.message, head.status, reader.body_text)
            return
        if reader.is_sse and self.transport.session.is_stateless:
            # A 2026-07-28 stream is not resumed: one that ended unanswered lost its
            # request (the server went away), which fails rather than waits forever.
            self.transport.fail(self.message, head.status, "the stream ended before the answer")

    def release(self, error: MCPError | None) -> None:
        """Authorization judged a held 401/403: fail its request with ``error``, or
        (None) let the answer mean what it says."""
        if not self.held:
            return
        self.held = False
        if error is not None:
            if self.message is not None:
                self.transport.fail_with(self.message, error)
            return
        body, self._held_body = bytes(self._held_body), bytearray()
        if body:
            self.on_body(body)
        self.on_end()

    def on_failure(self, detail: str) -> None:
        """The connection failed (no usable response)."""
        if self.message is not None:
            self.transport.fail(self.message, self.status, detail)


class RoundTrip(Generic[S]):
    """One HTTP request of the client and its answer, on a pooled connection.

    The runtime's loop (each I/O step done by the backend)::

        while trip.attempt():
            conn = trip.idle_connection() or trip.connected(a newly opened stream)
            send trip.request_bytes(); then until trip.done: trip.feed(the bytes read)
            (an I/O error: trip.broken(detail))
            finally: if not trip.release(): close conn.stream

    :meth:`attempt` is True for the first attempt and for one retry on a fresh
    connection, when a reused one failed before any byte of the answer came
    back (a server closing an idle keep-alive connection just as we sent).
    What the answer means goes through the :class:`ResponseHandler`.
    """

    def __init__(
        self,
        pool: ConnectionPool[S],
        endpoint: Endpoint,
        response: ResponseHandler,
        method: str,
        headers: dict[str, str],
        body: bytes | None,
    ) -> None:
        self.pool = pool
        self.endpoint = endpoint
        self.response = response
        self.method = method
        self.headers = headers
        self.body = body
        self.conn: PooledConnection[S] | None = None
        #: Whether the answer is over (or the attempt failed).
        self.done = False
        self._attempts = 0
        self._retry = False

    def attempt(self) -> bool:
        """Whether an attempt is due (the first, or the one retry)."""
        if self._attempts and not self._retry:
            return False
        self._attempts += 1
        self._retry = False
        self.done = False
        return True

    def idle_connection(self) -> PooledConnection[S] | None:
        """A kept-alive connection to send on, or None (always None for the retry)."""
        self.conn = self.pool.take(self.endpoint.origin) if self._attempts == 1 else None
        return self.conn

    def connected(self, stream: S) -> PooledConnection[S]:
        """The adapter opened ``stream`` for this attempt."""
        self.conn = self.pool.opened(self.endpoint.origin, self.endpoint.host_header, stream)
        return self.conn

    def cannot_connect(self, detail: str) -> None:
        self.done = True
        self.response.on_failure(f"cannot connect to {self.endpoint.host_header}: {detail}")

    def request_bytes(self) -> bytes:
        assert self.conn is not None
        return self.conn.http.send_request(
            self.method, self.endpoint.target, self.headers, self.body
        )

    def feed(self, data: bytes | bytearray) -> bool:
        """Bytes read from the connection (b"" at its end); True when messages
        reached the session."""
        assert self.conn is not None
        http = self.conn.http
        http.receive_data(data)
        delivered = False
        while not self.done:
            event = http.next_event()
            if event is NEED_DATA:
                break
            if isinstance(event, HTTPError):
                if data:
                    self.broken(f"the connection failed: {event.reason}")
                else:
                    # The connection ended early.  Mid-body the answer simply ended
                    # there (a handshake-era SSE stream is then resumed, SEP-1699).
                    self._end()
            elif isinstance(event, HTTPResponseHead):
                self.response.on_head(event)
                self.done = self.response.stops_at_head
            elif isinstance(event, bytes):
                try:
                    delivered = self.response.on_body(event) or delivered
                except RemoteProtocolError as exc:  # a malformed or oversized body
                    self.broken(f"the connection failed: {exc}")
            else:  # the end of the answer (None), or of the connection
                self._end()
        return delivered

    def _end(self) -> None:
        self.done = True
        if self.response.head is None:
            self.broken("the server closed the connection without answering")
        else:
            self.response.on_end()

    def broken(self, detail: str) -> None:
        """The connection failed (an I/O error, or an answer that is not HTTP)."""
        self.done = True
        if self._attempts == 1 and self.conn is not None and self.conn.http.may_retry:
            self._retry = True
        else:
            self.response.on_failure(detail)

    def release(self) -> bool:
        """Done with the attempt's connection: True if the pool keeps it, False if
        the adapter must close its stream."""
        conn, self.conn = self.conn, None
        return conn is not None and self.pool.release(conn)


#: How long later requests wait for the GET stream's response head (seconds), counted
#: from when the GET went out, by default (``open_http_client(get_stream_head_wait=)``).
#: Only a server that holds back its head waits it out; while it runs, no request can
#: reach a prompt server before the GET stream, so a request's answer is never sent on
#: the GET stream for want of its POST stream, and a POST stream's resumption is never
#: preceded by the GET stream opened late.
GET_STREAM_HEAD_WAIT = 5.0


class Settable(Protocol):
    """What a request waits on for its turn (the host's signal): only ``set`` is
    called here."""

    def set(self) -> None: ...


SignalT = TypeVar("SignalT", bound=Settable)


class SendOrder(Generic[SignalT]):
    """Lets a client's requests leave in the order they were queued, though each
    goes out from a task of its own on a connection of its own: a request takes
    its connection (an idle kept-alive one, read by the server at once, or a fresh
    one it must first accept) and is sent only once every request queued before it
    was sent, or given up.  Otherwise ``notifications/initialized`` could reach the
    server after the request behind it, or a POST before the GET stream the server
    answers it on.  The GET stream's turn lasts until its response head arrives
    (at most :data:`GET_STREAM_HEAD_WAIT` seconds after it went out): a server reads
    a request on a kept-alive connection long before it gets round to accepting a
    new one.

    ``new_signal`` makes what a request waits on (the host's signal).
    """

    def __init__(self, new_signal: Callable[[], SignalT]) -> None:
        self._new_signal = new_signal
        self._issued = 0
        self._current = 0
        self._finished: set[int] = set()
        self._waiting: dict[int, SignalT] = {}

    def ticket(self) -> int:
        """A place in the order, taken when the request is queued."""
        self._issued += 1
        return self._issued - 1

    def turn_of(self, ticket: int) -> bool:
        """Whether the request holding ``ticket`` may be sent now."""
        return ticket <= self._current

    def turn(self, ticket: int) -> SignalT | None:
        """None if ``ticket``'s request may be sent now, else a signal set when it may."""
        if self.turn_of(ticket):
            return None
        signal = self._waiting[ticket] = self._new_signal()
        return signal

    def done(self, ticket: int) -> None:
        """``ticket``'s request went out, or never will (a no-op the second time)."""
        self._waiting.pop(ticket, None)
        if ticket >= self._current:
            self._finished.add(ticket)
        while self._current in self._finished:
            self._finished.remove(self._current)
            self._current += 1
        signal = self._waiting.pop(self._current, None)
        if signal is not None:
            signal.set()
