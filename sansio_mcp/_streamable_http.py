"""The Streamable HTTP transport, server side: whole HTTP requests in,
exchanges out.

One endpoint serves both eras.  A POST carrying a 2026-07-28 request is
served statelessly on a session of its own; an ``initialize`` POST starts a
handshake session named by ``Mcp-Session-Id``, which later POSTs, the GET
stream and DELETE must carry.  An :class:`Exchange` is one HTTP response
as the MCP layer sees it: an immediate reply, or a stream the adapter
writes as the session produces output (:meth:`StreamableHTTPServer.flush`).
"""

from __future__ import annotations

import secrets
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable
from typing import Any

from . import _json
from ._errors import ErrorCode, MCPError, RemoteProtocolError
from ._http import HTTPRequest, media_types, url_hostname
from ._http_headers import validate_request_headers
from ._jsonrpc import RequestId, is_request_id, request_id_problem
from ._modern import is_modern_request
from ._outbox import Outgoing
from ._server_session import ServerSession
from ._sse import format_sse_comment, format_sse_event, format_sse_message
from ._versions import HANDSHAKE_REVISIONS, META_PROTOCOL_VERSION, MODERN_REVISIONS

__all__ = ["Exchange", "StreamableHTTPServer", "LOOPBACK_HOSTS", "check_host_and_origin"]

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")

# JSON-RPC error code -> HTTP status for a stateless request refused up front.
_MODERN_STATUS = {
    ErrorCode.HEADER_MISMATCH: 400,
    ErrorCode.MISSING_REQUIRED_CLIENT_CAPABILITY: 400,
    ErrorCode.UNSUPPORTED_PROTOCOL_VERSION: 400,
    ErrorCode.INVALID_PARAMS: 400,
    ErrorCode.INVALID_REQUEST: 400,
    ErrorCode.PARSE_ERROR: 400,
    ErrorCode.METHOD_NOT_FOUND: 404,
}
# ... and for one refused by its handler, while the response head is still unsent.
_LATE_STATUS: dict[int, int] = {ErrorCode.MISSING_REQUIRED_CLIENT_CAPABILITY: 400}

#: How long (seconds) a stateless request's response head waits for the request's
#: first output: its status may still change (a handler refusing with -32021 gets
#: HTTP 400), and an answer by then goes out as plain JSON.
MODERN_HEAD_GRACE = 1.0
#: The same wait on a handshake session, kept short: a slow request's SSE stream
#: should open (with its priming event, SEP-1699) soon.
LEGACY_HEAD_GRACE = 0.05
#: Bytes an event stream may hold unread (both HTTP transports): past them the stream's
#: session takes no new requests (503), and a stream still given messages that answer
#: nothing is closed (see :func:`not_being_read`).
DEFAULT_MAX_UNREAD = 16 * 1024 * 1024
#: Handshake sessions one Streamable HTTP server holds at most.
DEFAULT_MAX_SESSIONS = 10_000
#: Seconds a quiet handshake session lives without a request.
DEFAULT_SESSION_IDLE_TIMEOUT = 30 * 60.0


def _is_response(obj: Any) -> bool:
    return isinstance(obj, dict) and "method" not in obj and ("result" in obj or "error" in obj)


def not_being_read(exchange: Exchange, obj: Any, max_unread: int) -> bool:
    """Whether ``exchange``, a stream over ``max_unread`` unread bytes, must close rather
    than take ``obj``. Answers to the client's requests still go out (their number is
    bounded by the 503 its new requests get); anything else would grow without end."""
    return exchange.streaming and exchange.unsent > max_unread and not _answered_ids(obj)


def unread_refusal(stream: Exchange | None, max_unread: int) -> Exchange | None:
    """The 503 for a request on a session whose event stream is not being read."""
    if stream is None or stream.finished or stream.unsent <= max_unread:
        return None
    return _text(503, "the event stream of this session is not being read", {"retry-after": "1"})


def _answered_ids(obj: Any) -> set[Any]:
    """The request ids a message (or a 2025-03-26 batch) answers."""
    if isinstance(obj, list):
        return {m.get("id") for m in obj}
    return {obj.get("id")} if _is_response(obj) else set()


class Exchange:
    """One HTTP response in the making.

    A streaming exchange gains body chunks (:meth:`take`) until
    :attr:`finished`; the adapter sets :attr:`wake` to learn when.

    The answer to a request POST starts with its head pending: the adapter
    waits up to :attr:`head_grace` seconds for :attr:`head_ready`.  If the
    request's answer was its first output, the exchange has become a plain
    ``application/json`` response (``streaming`` is False: one write, no
    stream to watch); otherwise the adapter calls :meth:`commit_head` and
    sends the head of an SSE stream (``text/event-stream``).
    """

    def __init__(
        self,
        status: int,
        headers: dict[str, str],
        body: bytes = b"",
        *,
        streaming: bool = False,
        session: ServerSession | None = None,
    ) -> None:
        self.status = status
        self.headers = headers
        self.streaming = streaming
        #: The session whose events the adapter must drive for this exchange.
        self.session = session
        self.finished = not streaming
        self.wake: Callable[[], None] = lambda: None
        self._chunks: list[bytes] = [body] if body else []
        self._unsent = len(body)
        self._awaiting: set[RequestId] = set()
        self._json_mode = False
        self._stream_key = ""
        self._seq = 0
        self._on_close: Callable[[Exchange], None] = lambda exchange: None
        # A handshake POST stream cut before its answers (see _close_legacy_stream).
        self._detached = False
        #: Whether the status and headers may still change (see the class doc).
        self.head_pending = False
        #: How long the adapter waits for :attr:`head_ready` before committing the head.
        self.head_grace = 0.0
        # What a stream sends first once it opens (a handshake session's priming event).
        self._opener: Callable[[], None] | None = None

    @property
    def head_ready(self) -> bool:
        """Whether the status and headers are final (output arrived, or none can change them)."""
        return not self.head_pending or self.finished or bool(self._chunks)

    @property
    def unsent(self) -> int:
        """How many body bytes wait to be taken."""
        return self._unsent

    def _append(self, chunk: bytes) -> None:
        self._chunks.append(chunk)
        self._unsent += len(chunk)

    @property
    def has_news(self) -> bool:
        """Whether there are body bytes to take, or the exchange is over."""
        return self.finished or bool(self._chunks)

    def commit_head(self) -> None:
        """The adapter sends the head now: the status no longer changes."""
        self.head_pending = False
        self._open()

    def _open(self) -> None:
        opener, self._opener = self._opener, None
        if opener is not None and self.streaming:
            opener()

    def take(self) -> bytes:
        """The body bytes produced since the last call."""
        out = b"".join(self._chunks)
        self._chunks.clear()
        self._unsent = 0
        return out

    def disconnected(self) -> None:
        """The client went away (for a stateless request: that cancels it)."""
        if not self.finished:
            self.finished = True
            self._on_close(self)

    def keep_alive(self) -> None:
        """Queue an SSE comment so idle proxies keep the stream open."""
        if self.streaming and not self._json_mode and not self.finished:
            self._open()
            self._append(format_sse_comment())
            self.wake()

    def _put(self, item: Outgoing, event_id: str | None) -> None:
        if self._json_mode:
            self._append(item.data)
        else:
            self._append(format_sse_message(item.data, event_id))

    def _finish(self) -> None:
        self.finished = True
        self._on_close(self)


class _LegacySession:
    """A handshake session living across HTTP requests."""

    def __init__(self, session_id: str, session: ServerSession, memory: int) -> None:
        self.id = session_id
        self.session = session
        self.streams: dict[RequestId, Exchange] = {}
        self.get_stream: Exchange | None = None
        # Messages for the GET stream while none is open: the newest replay_memory of
        # them (a session nobody listens to must not grow without end).
        self.backlog: deque[Outgoing] = deque(maxlen=memory)
        # Each stream's last events by key, oldest stream first, for Last-Event-ID.
        self.replay: dict[str, deque[tuple[int, bytes]]] = {}
        self.memory = memory
        self.stream_count = 0

    def unmap(self, exchange: Exchange) -> None:
        """Forget that ``exchange`` is the stream of any of the session's requests."""
        for request_id in [r for r, ex in self.streams.items() if ex is exchange]:
            del self.streams[request_id]

    def remember(self, key: str, number: int, chunk: bytes, streams_kept: int) -> None:
        """Keep event ``number`` of stream ``key`` for resumption; beyond
        ``streams_kept`` streams, forget the least recently active ones, except the
        GET stream's and those with a request still unanswered."""
        replay = self.replay.pop(key, None)  # re-inserted: the newest activity is last
        if replay is None:
            replay = deque(maxlen=self.memory)
            self.replay[key] = replay
            if len(self.replay) > streams_kept:
                live = {ex._stream_key for ex in self.streams.values()}
                live.add("get")
                for old in [k for k in self.replay if k not in live and k != key]:
                    if len(self.replay) <= streams_kept:
                        break
                    del self.replay[old]
        else:
            self.replay[key] = replay
        replay.append((number, chunk))


class StreamableHTTPServer:
    """Routes HTTP requests to MCP sessions (both eras) and their output back.

    ``session_factory`` makes a configured :class:`ServerSession`.  By
    default only loopback ``Host`` and ``Origin`` values are accepted (DNS
    rebinding protection): pass ``allowed_hosts`` / ``allowed_origins`` to
    serve other names.
    """

    def __init__(
        self,
        session_factory: Callable[[], ServerSession],
        *,
        endpoint: str = "/mcp",
        allowed_hosts: Iterable[str] | None = None,
        allowed_origins: Iterable[str] | None = None,
        json_response: bool = False,
        new_session_id: Callable[[], str] = lambda: secrets.token_hex(16),
        replay_memory: int = 256,
        replay_streams: int = 64,
        tool_input_schema: Callable[[str], Any] | None = None,
        retry_interval: float | None = 1.0,
        max_unread: int = DEFAULT_MAX_UNREAD,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        session_idle_timeout: float | None = DEFAULT_SESSION_IDLE_TIMEOUT,
    ) -> None:
        self.session_factory = session_factory
        #: Handshake sessions at most: at the limit, a new ``initialize`` ends the least
        #: recently active session that has no stream or request open, or gets 503.
        self.max_sessions = max_sessions
        #: Seconds a handshake session may go without a request and with no stream or
        #: request open before it is ended (checked as requests come, given ``now``).
        self.session_idle_timeout = session_idle_timeout
        #: Bytes an event stream may hold unread (see :data:`DEFAULT_MAX_UNREAD`).
        self.max_unread = max_unread
        #: A tool's inputSchema by name, so that its ``x-mcp-header`` parameters'
        #: ``Mcp-Param-*`` headers are checked too (SEP-2243).
        self.tool_input_schema = tool_input_schema
        #: The SSE ``retry`` hint (seconds) sent when a POST stream opens (2025-11-25+).
        self.retry_interval = retry_interval
        self.endpoint = endpoint
        self.allowed_hosts = {h.lower() for h in (allowed_hosts or LOOPBACK_HOSTS)}
        self.allowed_origins = {o.lower().rstrip("/") for o in (allowed_origins or ())}
        self.json_response = json_response
        self.new_session_id = new_session_id
        #: Events kept per SSE stream of a handshake session, for ``Last-Event-ID``.
        self.replay_memory = replay_memory
        #: How many streams per session keep their events (the most recently active;
        #: the GET stream's and those with a request unanswered are always kept).
        self.replay_streams = replay_streams
        self._legacy: dict[str, _LegacySession] = {}
        # Handshake sessions by last activity, least recent first (for the limit and expiry).
        self._activity: OrderedDict[str, float] = OrderedDict()
        self._now: float | None = None
        self._by_session: dict[int, _LegacySession] = {}
        self._modern_exchange: dict[int, Exchange] = {}
        probe = session_factory()
        self._legacy_versions = [v for v in probe.supported_versions if v in HANDSHAKE_REVISIONS]
        self._modern_versions = [v for v in probe.supported_versions if v in MODERN_REVISIONS]

    # Entry ------------------------------------------------------------------------

    def handle(self, request: HTTPRequest, now: float | None = None) -> Exchange:
        """The exchange that answers ``request``; ``now``, if given, is passed to
        :meth:`expire_idle` first."""
        if now is not None:
            self.expire_idle(now)
        refusal = self._check_security(request)
        if refusal is not None:
            return refusal
        if request.path != self.endpoint:
            return _text(404, f"no MCP endpoint at {request.path}; it is at {self.endpoint}")
        if request.method == "POST":
            return self._post(request)
        if request.method == "GET":
            return self._get(request)
        if request.method == "DELETE":
            return self._delete(request)
        allow = "POST, GET, DELETE" if self._legacy_versions else "POST"
        return _text(405, f"{request.method} is not supported here", {"allow": allow})

    def _check_security(self, request: HTTPRequest) -> Exchange | None:
        return check_host_and_origin(request, self.allowed_hosts, self.allowed_origins)

    # POST -------------------------------------------------------------------------

    def _post(self, request: HTTPRequest) -> Exchange:
        content_type = media_types(request.headers.get("content-type"))
        if "application/json" not in content_type:
            return _text(415, "the body must be application/json")
        accept = media_types(request.headers.get("accept"))
        if not ({"application/json", "text/event-stream"} <= accept or "*/*" in accept):
            return _text(406, "Accept must list both application/json and text/event-stream")
        try:
            obj = _json.loads(request.body)
        except RemoteProtocolError as exc:
            return _json_error(400, None, ErrorCode.PARSE_ERROR, exc.message)
        messages = obj if isinstance(obj, list) else [obj]
        if not messages or not all(isinstance(m, dict) for m in messages):
            return _json_error(
                400, None, ErrorCode.INVALID_REQUEST, "the body must be a JSON-RPC message"
            )
        for message in messages:
            problem = request_id_problem(message)
            if problem is not None:
                # Neither a request nor a notification: its answer has nowhere else to go.
                return _json_error(400, None, ErrorCode.INVALID_REQUEST, problem)
        first = messages[0]
        params = first.get("params")
        if not isinstance(obj, list) and isinstance(params, dict) and is_modern_request(params):
            return self._post_modern(request, first)
        if not isinstance(obj, list) and self._claims_modern(request, first):
            # A stateless request (by its MCP-Protocol-Version) whose _meta lacks the
            # version: malformed params (-32602, HTTP 400), not a missing session.
            return _json_error(
                400,
                first.get("id"),
                ErrorCode.INVALID_PARAMS,
                f"params._meta[{META_PROTOCOL_VERSION!r}] is required "
                f"(MCP-Protocol-Version {request.headers.get('mcp-protocol-version')})",
            )
        return self._post_legacy(request, obj, messages)

    def _claims_modern(self, request: HTTPRequest, message: dict[str, Any]) -> bool:
        return (
            "id" in message
            and message.get("method") != "initialize"
            and "mcp-session-id" not in request.headers
            and request.headers.get("mcp-protocol-version") in self._modern_versions
        )

    def _post_modern(self, request: HTTPRequest, message: dict[str, Any]) -> Exchange:
        if "id" not in message:
            # The core protocol defines no client notification over HTTP in this revision.
            session = self.session_factory()
            session.receive_message(message)
            session.messages_to_send()
            return Exchange(202, {})
        mismatch = validate_request_headers(
            request.headers, message, input_schema=self._input_schema(message)
        )
        if mismatch is not None:
            return _json_error(400, message.get("id"), mismatch.code, mismatch.message)
        session = self.session_factory()
        session.receive_message(message)
        request_id = message["id"]
        early = session.outgoing_to_send()
        last: Any = early[-1].message if early else None
        if _is_response(last) and last.get("id") == request_id:
            error = last.get("error")
            status = _MODERN_STATUS.get(error["code"], 200) if isinstance(error, dict) else 200
            return Exchange(status, {"content-type": "application/json"}, early[-1].data)
        exchange = self._request_exchange(session, request_id)
        for item in early:
            self._deliver(exchange, item, None)
        return exchange

    def _request_exchange(self, session: ServerSession, request_id: RequestId) -> Exchange:
        """The exchange of a request served on a session of its own: it waits for the
        request's answer, and closing it cancels the request."""
        exchange = self._stream_exchange(session)
        exchange._awaiting.add(request_id)
        exchange.head_pending = True
        exchange.head_grace = MODERN_HEAD_GRACE
        self._modern_exchange[id(session)] = exchange
        exchange._on_close = lambda ex: self._close_modern(session, ex, request_id)
        return exchange

    def _input_schema(self, message: dict[str, Any]) -> Any:
        params = message.get("params")
        name = params.get("name") if isinstance(params, dict) else None
        if message.get("method") != "tools/call" or self.tool_input_schema is None:
            return None
        return self.tool_input_schema(name) if isinstance(name, str) else None

    def _close_modern(
        self, session: ServerSession, exchange: Exchange, request_id: RequestId
    ) -> None:
        self._modern_exchange.pop(id(session), None)
        if request_id in exchange._awaiting:
            # Closing the response stream cancels a stateless request.
            session.receive_message(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/cancelled",
                    "params": {"requestId": request_id},
                }
            )

    def _post_legacy(
        self, request: HTTPRequest, obj: Any, messages: list[dict[str, Any]]
    ) -> Exchange:
        if not self._legacy_versions:
            return _json_error(
                400,
                messages[0].get("id"),
                ErrorCode.INVALID_PARAMS,
                f"params._meta[{META_PROTOCOL_VERSION!r}] is required "
                "(this server speaks 2026-07-28)",
            )
        is_initialize = any(m.get("method") == "initialize" for m in messages)
        session_id = request.headers.get("mcp-session-id")
        if is_initialize:
            if isinstance(obj, list):
                return _json_error(
                    400, None, ErrorCode.INVALID_REQUEST, "initialize must not be part of a batch"
                )
            return self._initialize(messages[0])
        if session_id is None:
            return _json_error(
                400, None, ErrorCode.INVALID_REQUEST, "Mcp-Session-Id header is required"
            )
        state = self._legacy.get(session_id)
        if state is None:
            return _json_error(404, None, ErrorCode.INVALID_REQUEST, "unknown or ended session")
        self._touch(session_id)
        version = request.headers.get("mcp-protocol-version")
        if version is not None and version not in self._legacy_versions:
            return _json_error(
                400,
                None,
                ErrorCode.INVALID_REQUEST,
                f"unsupported MCP-Protocol-Version {version!r}",
            )
        refusal = unread_refusal(state.get_stream, self.max_unread)
        if refusal is not None:
            return refusal
        revision = state.session.revision
        if isinstance(obj, list) and revision is not None and not revision.batching:
            return _json_error(
                400,
                None,
                ErrorCode.INVALID_REQUEST,
                f"JSON-RPC batches are not part of revision {revision.name}",
            )
        request_ids = [m["id"] for m in messages if "method" in m and is_request_id(m.get("id"))]
        state.session.receive_message(obj)
        cancelled = [
            m.get("params") for m in messages if m.get("method") == "notifications/cancelled"
        ]
        if not request_ids:
            self._flush_then_end(state, cancelled)
            return Exchange(202, {}, session=state.session)
        exchange = self._stream_exchange(state.session)
        exchange._stream_key = f"s{state.stream_count}"
        state.stream_count += 1
        exchange._awaiting.update(request_ids)
        for request_id in request_ids:
            state.streams[request_id] = exchange
        exchange._on_close = lambda ex: self._close_legacy_stream(state, ex)
        exchange.head_pending = True
        exchange.head_grace = LEGACY_HEAD_GRACE
        exchange._opener = lambda: self._prime(exchange, state)
        self._flush_then_end(state, cancelled)
        return exchange

    def _flush_then_end(self, state: _LegacySession, cancelled: list[Any]) -> None:
        """Route the session's output, then end the streams' wait for the requests
        that ``cancelled`` (notifications/cancelled params) name: a cancelled request
        gets no answer, so a stream waiting only for it would stay open for good.
        Flushing first lets an answer already queued go out."""
        self.flush(state.session)
        for params in cancelled:
            request_id = params.get("requestId") if isinstance(params, dict) else None
            if not is_request_id(request_id) or request_id not in state.streams:
                continue
            exchange = state.streams.pop(request_id)
            exchange._awaiting.discard(request_id)
            if not exchange._awaiting and not exchange.finished:
                exchange._finish()
                exchange.wake()

    def _prime(self, exchange: Exchange, state: _LegacySession) -> None:
        """Open a POST's SSE stream with an event that has an id and no data, and the
        ``retry`` hint, so a client whose stream breaks can resume it (SEP-1699).
        Only from 2025-11-25: older clients may choke on an event without data."""
        if exchange._json_mode or (state.session.protocol_version or "") < "2025-11-25":
            return
        retry = None if self.retry_interval is None else round(self.retry_interval * 1000)
        chunk = format_sse_event("", id=f"{exchange._stream_key}-0", retry=retry)
        exchange._append(chunk)
        state.remember(exchange._stream_key, 0, chunk, self.replay_streams)

    def _initialize(self, message: dict[str, Any]) -> Exchange:
        refusal = self._make_room()
        if refusal is not None:
            return refusal
        session = self.session_factory()
        session.receive_message(message)
        out = session.outgoing_to_send()
        response = out[-1].message if out else None
        body = out[-1].data if out else b""
        if not (isinstance(response, dict) and "result" in response):
            return Exchange(
                400 if response is None else 200, {"content-type": "application/json"}, body
            )
        session_id = self.new_session_id()
        state = _LegacySession(session_id, session, self.replay_memory)
        self._legacy[session_id] = state
        self._by_session[id(session)] = state
        self._touch(session_id)
        headers = {"content-type": "application/json", "mcp-session-id": session_id}
        return Exchange(200, headers, body, session=session)

    def _close_legacy_stream(self, state: _LegacySession, exchange: Exchange) -> None:
        # Disconnection is not cancellation on the handshake revisions: a POST
        # stream cut before its answers stays its requests' stream, detached, so
        # what they send next is kept for a GET that resumes it (Last-Event-ID),
        # if it sent an event id to resume from (else their messages go on the GET
        # stream, as if the POST had had no stream).
        if (
            exchange._awaiting
            and exchange._stream_key != "get"
            and exchange._stream_key in state.replay
        ):
            exchange._detached = True
            return
        state.unmap(exchange)
        if state.get_stream is exchange:
            state.get_stream = None

    def _stream_exchange(self, session: ServerSession) -> Exchange:
        if self.json_response:
            exchange = Exchange(
                200, {"content-type": "application/json"}, streaming=True, session=session
            )
            exchange._json_mode = True
            return exchange
        return Exchange(
            200,
            {
                "content-type": "text/event-stream",
                "cache-control": "no-cache",
                "x-accel-buffering": "no",
            },
            streaming=True,
            session=session,
        )

    # GET and DELETE ------------------------------------------------------------------

    def _get(self, request: HTTPRequest) -> Exchange:
        if not self._legacy_versions:
            return _text(405, "this server has no GET stream (2026-07-28)", {"allow": "POST"})
        if "text/event-stream" not in media_types(request.headers.get("accept")):
            return _text(406, "Accept must list text/event-stream")
        state, refusal = self._session_for(request)
        if state is None:
            assert refusal is not None
            return refusal
        last = request.headers.get("last-event-id")
        exchange = self._stream_exchange(state.session)
        exchange._json_mode = False
        exchange.headers = {"content-type": "text/event-stream", "cache-control": "no-cache"}
        if last is not None:
            key, _, seq = last.rpartition("-")
            if key in state.replay and seq.isascii() and seq.isdigit():
                exchange._seq = int(seq)
                for number, chunk in state.replay[key]:
                    if number > int(seq):
                        exchange._append(chunk)
                        exchange._seq = number  # new events continue after the replayed ones
                exchange._stream_key = key
                still_open = [ex for ex in state.streams.values() if ex._stream_key == key]
                exchange._seq = max([exchange._seq, *(ex._seq for ex in still_open)])
                for request_id, ex in list(state.streams.items()):
                    if ex._stream_key == key:
                        state.streams[request_id] = exchange
                        exchange._awaiting.add(request_id)
                for earlier in still_open:  # a POST still open, or an earlier resumption
                    if not earlier.finished:
                        earlier._awaiting.clear()
                        earlier._finish()
                        earlier.wake()
                if still_open or key != "get":
                    exchange._on_close = lambda ex: self._close_legacy_stream(state, ex)
                    if not exchange._awaiting and key != "get":
                        exchange.finished = True  # the resumed stream had already ended
                    return exchange
        if state.get_stream is not None and not state.get_stream.finished:
            return _text(409, "a GET stream is already open for this session")
        exchange._stream_key = "get"
        kept = state.replay.get("get")
        if kept:  # ids go on from the session's earlier GET streams, never reused
            exchange._seq = max(exchange._seq, kept[-1][0])
        state.get_stream = exchange
        exchange._on_close = lambda ex: self._close_legacy_stream(state, ex)
        for item in state.backlog:
            self._deliver(exchange, item, state)
        state.backlog.clear()
        return exchange

    def _delete(self, request: HTTPRequest) -> Exchange:
        if not self._legacy_versions:
            return _text(405, "there are no sessions to end (2026-07-28)", {"allow": "POST"})
        state, refusal = self._session_for(request)
        if state is None:
            assert refusal is not None
            return refusal
        self.end_session(state.id)
        # Carrying the ended session lets the adapter forget it and cancel its handlers.
        return Exchange(200, {}, session=state.session)

    def _session_for(self, request: HTTPRequest) -> tuple[_LegacySession | None, Exchange | None]:
        session_id = request.headers.get("mcp-session-id")
        if session_id is None:
            return None, _json_error(
                400, None, ErrorCode.INVALID_REQUEST, "Mcp-Session-Id header is required"
            )
        state = self._legacy.get(session_id)
        if state is None:
            return None, _json_error(
                404, None, ErrorCode.INVALID_REQUEST, "unknown or ended session"
            )
        self._touch(session_id)
        return state, None

    # Session limits -----------------------------------------------------------------

    def _touch(self, session_id: str) -> None:
        self._activity[session_id] = self._now or 0.0
        self._activity.move_to_end(session_id)

    @staticmethod
    def _is_quiet(state: _LegacySession) -> bool:
        """No request awaits its answer and no stream is open."""
        open_get = state.get_stream is not None and not state.get_stream.finished
        return not open_get and not any(not ex.finished for ex in state.streams.values())

    def expire_idle(self, now: float) -> None:
        """Tell the time (seconds, any monotonic clock): handshake sessions quiet for
        longer than :attr:`session_idle_timeout` end. The adapters call it per request."""
        self._now = now
        timeout = self.session_idle_timeout
        if timeout is None:
            return
        while self._activity:
            session_id, last = next(iter(self._activity.items()))
            if now - last <= timeout:
                return
            state = self._legacy.get(session_id)
            if state is None or self._is_quiet(state):
                self.end_session(session_id)
                self._activity.pop(session_id, None)
            else:
                self._touch(session_id)  # a stream or request is open: it is not idle

    def _make_room(self) -> Exchange | None:
        """Room for one more handshake session, or the 503 that says there is none."""
        if len(self._legacy) < self.max_sessions:
            return None
        for session_id in self._activity:
            state = self._legacy.get(session_id)
            if state is not None and self._is_quiet(state):
                self.end_session(session_id)
                return None
        return _text(
            503, f"this server holds its {self.max_sessions} sessions", {"retry-after": "5"}
        )

    def end_session(self, session_id: str) -> None:
        """End a handshake session: its streams close, later requests get 404."""
        state = self._legacy.pop(session_id, None)
        self._activity.pop(session_id, None)
        if state is None:
            return
        self._by_session.pop(id(state.session), None)
        state.session.close()
        for exchange in {
            *state.streams.values(),
            *([state.get_stream] if state.get_stream else []),
        }:
            exchange._awaiting.clear()
            exchange._finish()
            exchange.wake()

    @property
    def session_ids(self) -> frozenset[str]:
        return frozenset(self._legacy)

    def session_for(self, request: HTTPRequest) -> ServerSession | None:
        """The live session ``request`` names (``Mcp-Session-Id``), if any."""
        state = self._legacy.get(request.headers.get("mcp-session-id") or "")
        return state.session if state is not None else None

    def owns(self, session: ServerSession) -> bool:
        """Whether ``session`` is a live handshake session (not one request's own)."""
        return id(session) in self._by_session

    # Output routing -----------------------------------------------------------------

    def flush(self, session: ServerSession) -> None:
        """Route what ``session`` queued to the exchanges it belongs to, and wake them."""
        modern = self._modern_exchange.get(id(session))
        state = self._by_session.get(id(session))
        for item in session.outgoing_to_send():
            if modern is not None:
                self._deliver(modern, item, None)
                continue
            if state is None:
                continue  # an ended session or a finished stateless request: nobody to tell
            obj = item.message
            target = self._legacy_target(state, obj, item.route)
            if target is not None and target._json_mode and not _is_response(obj):
                # A JSON response carries only the final answer: requests and
                # notifications for the client go on the GET stream instead.
                stream = state.get_stream
                target = stream if stream is not None and not stream.finished else None
            if target is not None:
                self._deliver(target, item, state)
            elif not _is_response(obj):
                state.backlog.append(item)

    def _legacy_target(
        self, state: _LegacySession, obj: Any, route: RequestId | None
    ) -> Exchange | None:
        if isinstance(obj, list):  # a 2025-03-26 batch answer
            ids = {m.get("id") for m in obj if isinstance(m, dict)}
            for request_id in ids:
                if request_id in state.streams:
                    return state.streams[request_id]
            return None
        if route is not None and route in state.streams:
            return state.streams[route]
        if _is_response(obj):
            return None
        stream = state.get_stream
        return stream if stream is not None and not stream.finished else None

    def _deliver(self, exchange: Exchange, item: Outgoing, state: _LegacySession | None) -> None:
        if exchange._detached and state is not None:
            self._keep_for_resumption(exchange, item, state)
            return
        if exchange.finished:
            return
        obj = item.message
        if exchange.head_pending and not exchange._chunks:
            if self._answer_plainly(exchange, item):
                return
            exchange._open()  # something to stream first: this is an SSE stream after all
        event_id = None
        if state is not None and not exchange._json_mode:
            exchange._seq += 1
            event_id = f"{exchange._stream_key}-{exchange._seq}"
        if not_being_read(exchange, obj, self.max_unread):
            # Closed, the stream can be resumed (Last-Event-ID) from what is remembered.
            if state is not None and event_id is not None:
                chunk = format_sse_message(item.data, event_id)
                state.remember(exchange._stream_key, exchange._seq, chunk, self.replay_streams)
            exchange._finish()
            exchange.wake()
            return
        before = len(exchange._chunks)
        if exchange._json_mode and not _is_response(obj) and not isinstance(obj, list):
            pass  # a JSON response carries only the final answer
        else:
            exchange._put(item, event_id)
        if state is not None and event_id is not None and len(exchange._chunks) > before:
            state.remember(
                exchange._stream_key, exchange._seq, exchange._chunks[-1], self.replay_streams
            )
        answered = _answered_ids(obj)
        exchange._awaiting -= answered
        if answered and not exchange._awaiting:
            exchange._finish()
            if state is not None:
                for request_id in answered:
                    state.streams.pop(request_id, None)
        exchange.wake()

    def _keep_for_resumption(
        self, exchange: Exchange, item: Outgoing, state: _LegacySession
    ) -> None:
        """Number and keep an event of a detached POST stream without sending it."""
        exchange._seq += 1
        chunk = format_sse_message(item.data, f"{exchange._stream_key}-{exchange._seq}")
        state.remember(exchange._stream_key, exchange._seq, chunk, self.replay_streams)
        exchange._awaiting -= _answered_ids(item.message)
        if not exchange._awaiting:
            state.unmap(exchange)

    def _answer_plainly(self, exchange: Exchange, item: Outgoing) -> bool:
        """Turn a stream whose first output is its whole answer into a plain
        ``application/json`` response (with the status of a refusal that has one
        of its own, e.g. -32021: 400).  Either form is allowed for a request POST."""
        obj = item.message
        if isinstance(obj, list):  # a 2025-03-26 batch answer
            answered = {m.get("id") for m in obj if isinstance(m, dict)}
            error = None
        elif _is_response(obj):
            answered = {obj.get("id")}
            error = obj.get("error")
        else:
            return False
        if not exchange._awaiting or not exchange._awaiting <= answered:
            return False
        code = error.get("code") if isinstance(error, dict) else None
        exchange.status = _LATE_STATUS.get(code, 200) if isinstance(code, int) else 200
        exchange.headers = {"content-type": "application/json"}
        exchange.streaming = False
        exchange._append(item.data)
        exchange._awaiting.clear()
        exchange._finish()
        exchange.wake()
        return True


def check_host_and_origin(
    request: HTTPRequest, allowed_hosts: set[str], allowed_origins: set[str]
) -> Exchange | None:
    """DNS-rebinding protection: a 403 exchange unless Host (and Origin, when
    present) name an allowed host (by default: loopback only)."""
    host = request.headers.get("host", "")
    hostname = url_hostname(f"//{host}")
    if hostname is None:
        return _json_error(400, None, ErrorCode.INVALID_REQUEST, f"malformed Host {host!r}")
    if hostname not in allowed_hosts and host.lower() not in allowed_hosts:
        return _json_error(403, None, ErrorCode.INVALID_REQUEST, f"host {host!r} is not allowed")
    origin = request.headers.get("origin")
    if origin is not None:
        if origin.lower().rstrip("/") in allowed_origins:
            return None
        if allowed_origins or url_hostname(origin) not in allowed_hosts:
            return _json_error(
                403, None, ErrorCode.INVALID_REQUEST, f"origin {origin!r} is not allowed"
            )
    return None


def _text(status: int, message: str, extra: dict[str, str] | None = None) -> Exchange:
    headers = {"content-type": "text/plain; charset=utf-8", **(extra or {})}
    return Exchange(status, headers, message.encode("utf-8"))


def _json_error(status: int, request_id: Any, code: int, message: str) -> Exchange:
    error = MCPError(code, message).to_dict()
    body: dict[str, Any] = {"jsonrpc": "2.0", "error": error}
    body["id"] = request_id if is_request_id(request_id) else None
    return Exchange(status, {"content-type": "application/json"}, _json.encode(body))
