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
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from ._errors import ErrorCode
from ._exchange import (
    DEFAULT_MAX_UNREAD,
    Exchange,
    answered_ids,
    is_response,
    json_error,
    not_being_read,
    unread_refusal,
)
from ._exchange import text_reply as _text
from ._handshake_sessions import (
    DEFAULT_MAX_SESSIONS,
    DEFAULT_SESSION_IDLE_TIMEOUT,
    HandshakeSession,
    HandshakeSessions,
)
from ._http import HTTPRequest, media_types
from ._http_headers import ToolHeaderParams, validate_request_headers
from ._http_intake import LOOPBACK_HOSTS, check_host_and_origin, read_post
from ._jsonrpc import RequestId, is_request_id
from ._outbox import Outgoing, encode_message
from ._server_session import ServerSession
from ._sse import format_sse_event
from ._state import SessionState
from ._stateless import is_stateless_request
from ._versions import HANDSHAKE_REVISIONS, META_PROTOCOL_VERSION, STATELESS_REVISIONS

__all__ = [
    "SessionRelay",
    "DEFAULT_MAX_SESSIONS",
    "DEFAULT_MAX_UNREAD",
    "DEFAULT_SESSION_IDLE_TIMEOUT",
    "Exchange",
    "StreamableHTTPServer",
    "LOOPBACK_HOSTS",
    "check_host_and_origin",
    "not_being_read",
    "unread_refusal",
]

# JSON-RPC error code -> HTTP status for a stateless request refused up front.
_STATELESS_STATUS = {
    ErrorCode.HEADER_MISMATCH: 400,
    ErrorCode.MISSING_REQUIRED_CLIENT_CAPABILITY: 400,
    ErrorCode.UNSUPPORTED_PROTOCOL_VERSION: 400,
    ErrorCode.INVALID_PARAMS: 400,
    ErrorCode.INVALID_REQUEST: 400,
    ErrorCode.PARSE_ERROR: 400,
    ErrorCode.METHOD_NOT_FOUND: 404,
}

#: How long (seconds) a stateless request's response head waits for the request's
#: first output: its status may still change (a handler refusing with -32021 gets
#: HTTP 400), and an answer by then goes out as plain JSON.
STATELESS_HEAD_GRACE = 1.0
#: The same wait on a handshake session, kept short: a slow request's SSE stream
#: should open (with its priming event, SEP-1699) soon.
HANDSHAKE_HEAD_GRACE = 0.05


class SessionRelay(Protocol):
    """Where a handshake session's messages go that another replica's copy of the
    session must see (set as :attr:`StreamableHTTPServer.relay` when replicas share
    sessions; called synchronously, so it only queues them)."""

    def client_message(self, session_id: str, message: dict[str, Any]) -> None:
        """A client's answer to a question this copy did not ask, or its
        ``notifications/cancelled`` for a request this copy is not running."""
        ...

    def server_message(self, session_id: str, message: Any) -> None:
        """A message for the session's GET stream, which is not open here."""
        ...


#: Copies of one session on several replicas number their questions from a random
#: point below this (JSON numbers stay exact up to 2**53), so that an answer names
#: the one copy that asked.
_REQUEST_ID_SPACE = 1 << 52


def _names_open(cancelled: dict[str, Any], open_requests: frozenset[RequestId]) -> bool:
    """Whether a ``notifications/cancelled`` names one of ``open_requests``."""
    params = cancelled.get("params")
    request_id = params.get("requestId") if isinstance(params, dict) else None
    return is_request_id(request_id) and request_id in open_requests


class StreamableHTTPServer:
    """Routes HTTP requests to MCP sessions (both eras) and their output back.

    ``session_factory`` makes a configured :class:`ServerSession`.  By
    default only loopback ``Host`` and ``Origin`` values are accepted (DNS
    rebinding protection): pass ``allowed_hosts`` / ``allowed_origins`` to
    serve other names.
    """

    #: Whether this router keeps handshake sessions, so that replicas share them (a
    #: subclass serving none says False: nothing of its is recorded or relayed).
    keeps_sessions = True

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
        #: The live handshake sessions, with their limit and expiry.
        self.sessions = HandshakeSessions(max_sessions, session_idle_timeout)
        #: Bytes an event stream may hold unread (see :data:`DEFAULT_MAX_UNREAD`).
        self.max_unread = max_unread
        #: The ``Mcp-Param-*`` headers a tool's ``x-mcp-header`` parameters call for,
        #: from its inputSchema by name (SEP-2243).
        self.header_params = ToolHeaderParams(tool_input_schema)
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
        self._stateless_exchange: dict[int, Exchange] = {}
        #: Set when replicas share handshake sessions (see :class:`SessionRelay`);
        #: None: one process, as without replicas.
        self.relay: SessionRelay | None = None
        # The versions are the sessions': the first is made now to learn them, and
        # serves the first request that needs a session.
        self._spare: ServerSession | None = session_factory()
        versions = self._spare.supported_versions
        self._handshake_versions = [v for v in versions if v in HANDSHAKE_REVISIONS]
        self._stateless_versions = [v for v in versions if v in STATELESS_REVISIONS]

    def _new_session(self) -> ServerSession:
        spare, self._spare = self._spare, None
        return spare if spare is not None else self.session_factory()

    @property
    def max_sessions(self) -> int:
        """Handshake sessions at most: at the limit, a new ``initialize`` ends the least
        recently active session that has no stream or request open, or gets 503."""
        return self.sessions.max_sessions

    @max_sessions.setter
    def max_sessions(self, value: int) -> None:
        self.sessions.max_sessions = value

    @property
    def session_idle_timeout(self) -> float | None:
        """Seconds a handshake session may go without a request and with no stream or
        request open before it is ended (checked as requests come, given ``now``)."""
        return self.sessions.idle_timeout

    @session_idle_timeout.setter
    def session_idle_timeout(self, value: float | None) -> None:
        self.sessions.idle_timeout = value

    # Entry ------------------------------------------------------------------------

    def handle(self, request: HTTPRequest, now: float | None = None) -> Exchange:
        """The exchange that answers ``request``; ``now``, if given, is passed to
        :meth:`expire_idle` first."""
        if now is not None:
            self.expire_idle(now)
        refusal = self._check_security(request)
        if refusal is not None:
            return refusal
        return self._route(request)

    def _route(self, request: HTTPRequest) -> Exchange:
        """:meth:`handle` once Host and Origin passed (a subclass that checks them
        itself, before its own checks, calls this rather than check them twice)."""
        if request.path != self.endpoint:
            return _text(404, f"no MCP endpoint at {request.path}; it is at {self.endpoint}")
        if request.method == "POST":
            return self._post(request)
        if request.method == "GET":
            return self._get(request)
        if request.method == "DELETE":
            return self._delete(request)
        allow = "POST, GET, DELETE" if self._handshake_versions else "POST"
        return _text(405, f"{request.method} is not supported here", {"allow": allow})

    def _check_security(self, request: HTTPRequest) -> Exchange | None:
        return check_host_and_origin(request, self.allowed_hosts, self.allowed_origins)

    # POST -------------------------------------------------------------------------

    def _post(self, request: HTTPRequest) -> Exchange:
        body = read_post(request)
        if isinstance(body, Exchange):
            return body
        obj, messages = body.obj, body.messages
        first = messages[0]
        params = first.get("params")
        if not isinstance(obj, list) and isinstance(params, dict) and is_stateless_request(params):
            return self._post_stateless(request, first)
        if not isinstance(obj, list) and self._claims_stateless(request, first):
            # A stateless request (by its MCP-Protocol-Version) whose _meta lacks the
            # version: malformed params (-32602, HTTP 400), not a missing session.
            return json_error(
                400,
                first.get("id"),
                ErrorCode.INVALID_PARAMS,
                f"params._meta[{META_PROTOCOL_VERSION!r}] is required "
                f"(MCP-Protocol-Version {request.headers.get('mcp-protocol-version')})",
            )
        return self._post_handshake(request, obj, messages)

    def _claims_stateless(self, request: HTTPRequest, message: dict[str, Any]) -> bool:
        return (
            "id" in message
            and message.get("method") != "initialize"
            and "mcp-session-id" not in request.headers
            and request.headers.get("mcp-protocol-version") in self._stateless_versions
        )

    def _post_stateless(self, request: HTTPRequest, message: dict[str, Any]) -> Exchange:
        if "id" not in message:
            # The core protocol defines no client notification over HTTP in this revision.
            session = self._new_session()
            session.receive_message(message)
            session.messages_to_send()
            return Exchange(202, {})
        mismatch = validate_request_headers(
            request.headers, message, found=self.header_params.of(message)
        )
        if mismatch is not None:
            return json_error(400, message.get("id"), mismatch.code, mismatch.message)
        session = self._new_session()
        session.receive_message(message)
        request_id = message["id"]
        early = session.outgoing_to_send()
        last: Any = early[-1].message if early else None
        if is_response(last) and last.get("id") == request_id:
            error = last.get("error")
            status = _STATELESS_STATUS.get(error["code"], 200) if isinstance(error, dict) else 200
            return Exchange(status, {"content-type": "application/json"}, early[-1].data)
        exchange = self._request_exchange(session, request_id)
        for item in early:
            self._deliver(exchange, item, None)
        return exchange

    def _request_exchange(self, session: ServerSession, request_id: RequestId) -> Exchange:
        """The exchange of a request served on a session of its own: it waits for the
        request's answer, and closing it cancels the request."""
        exchange = self._stream_exchange(session)
        exchange.awaiting.add(request_id)
        exchange.head_pending = True
        exchange.head_grace = STATELESS_HEAD_GRACE
        self._stateless_exchange[id(session)] = exchange
        exchange.on_close = lambda ex: self._close_stateless(session, ex, request_id)
        return exchange

    def _close_stateless(
        self, session: ServerSession, exchange: Exchange, request_id: RequestId
    ) -> None:
        self._stateless_exchange.pop(id(session), None)
        if request_id in exchange.awaiting:
            # Closing the response stream cancels a stateless request.
            session.receive_message(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/cancelled",
                    "params": {"requestId": request_id},
                }
            )

    def _post_handshake(
        self, request: HTTPRequest, obj: Any, messages: list[dict[str, Any]]
    ) -> Exchange:
        if not self._handshake_versions:
            return json_error(
                400,
                messages[0].get("id"),
                ErrorCode.INVALID_PARAMS,
                f"params._meta[{META_PROTOCOL_VERSION!r}] is required "
                "(this server speaks 2026-07-28)",
            )
        is_initialize = any(m.get("method") == "initialize" for m in messages)
        if is_initialize:
            if isinstance(obj, list):
                return json_error(
                    400, None, ErrorCode.INVALID_REQUEST, "initialize must not be part of a batch"
                )
            return self._initialize(messages[0])
        state, refusal = self._session_for(request)
        if state is None:
            assert refusal is not None
            return refusal
        version = request.headers.get("mcp-protocol-version")
        if version is not None and version not in self._handshake_versions:
            return json_error(
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
            return json_error(
                400,
                None,
                ErrorCode.INVALID_REQUEST,
                f"JSON-RPC batches are not part of revision {revision.name}",
            )
        if self.relay is not None:
            obj, messages = self._relay_foreign(state, obj, messages)
            if not messages:
                return Exchange(202, {})
        request_ids = [m["id"] for m in messages if "method" in m and is_request_id(m.get("id"))]
        state.session.receive_message(obj)
        cancelled = [
            m.get("params") for m in messages if m.get("method") == "notifications/cancelled"
        ]
        if not request_ids:
            self._flush_then_end(state, cancelled)
            return Exchange(202, {}, session=state.session)
        exchange = self._stream_exchange(state.session)
        state.open_stream(exchange, request_ids)
        exchange.head_pending = True
        exchange.head_grace = HANDSHAKE_HEAD_GRACE
        exchange.opener = lambda: self._prime(exchange, state)
        self._flush_then_end(state, cancelled)
        return exchange

    def _relay_foreign(
        self, state: HandshakeSession, obj: Any, messages: list[dict[str, Any]]
    ) -> tuple[Any, list[dict[str, Any]]]:
        """Hand the messages meant for another replica's copy of the session to the
        relay; the rest (as a batch if ``obj`` was one), for this copy."""
        assert self.relay is not None
        session = state.session
        mine = []
        for message in messages:
            if message.get("method") == "notifications/initialized" and (
                session.state is SessionState.READY
            ):
                continue  # an adopted copy replayed it; the client sent it to the first
            answered = message.get("id")
            if (
                is_response(message)
                and is_request_id(answered)
                and answered not in session.pending_requests
            ):
                self.relay.client_message(state.id, message)
            elif message.get("method") == "notifications/cancelled" and not _names_open(
                message, session.open_requests
            ):
                self.relay.client_message(state.id, message)
            else:
                mine.append(message)
        if len(mine) == len(messages):
            return obj, messages
        return (mine if isinstance(obj, list) else (mine[0] if mine else None)), mine

    def _flush_then_end(self, state: HandshakeSession, cancelled: list[Any]) -> None:
        """Route the session's output, then end the streams' wait for the cancelled
        requests (flushing first lets an answer already queued go out)."""
        self.flush(state.session)
        state.end_waits(cancelled)

    def _prime(self, exchange: Exchange, state: HandshakeSession) -> None:
        """Open a POST's SSE stream with an event that has an id and no data, and the
        ``retry`` hint, so a client whose stream breaks can resume it (SEP-1699).
        Only from 2025-11-25: older clients may choke on an event without data."""
        if exchange.json_mode or (state.session.protocol_version or "") < "2025-11-25":
            return
        retry = None if self.retry_interval is None else round(self.retry_interval * 1000)
        chunk = format_sse_event("", id=f"{exchange.stream_key}-0", retry=retry)
        exchange.append(chunk)
        state.remember(exchange.stream_key, 0, chunk)

    def _initialize(self, message: dict[str, Any]) -> Exchange:
        if not self.sessions.make_room():
            return _text(
                503, f"this server holds its {self.max_sessions} sessions", {"retry-after": "5"}
            )
        session = self._new_session()
        if self.relay is not None:
            session.start_request_ids_at(secrets.randbelow(_REQUEST_ID_SPACE))
        session.receive_message(message)
        out = session.outgoing_to_send()
        response = out[-1].message if out else None
        body = out[-1].data if out else b""
        if not (isinstance(response, dict) and "result" in response):
            return Exchange(
                400 if response is None else 200, {"content-type": "application/json"}, body
            )
        if self.relay is not None:
            # Its ``initialized`` may reach another replica: this copy is ready as
            # an adopted one is (and drops the notification if it comes here).
            session.receive_message({"jsonrpc": "2.0", "method": "notifications/initialized"})
        session_id = self.new_session_id()
        state = HandshakeSession(session_id, session, self.replay_memory, self.replay_streams)
        params = message.get("params")
        state.init_params = params if isinstance(params, dict) else {}
        self.sessions.add(state)
        headers = {"content-type": "application/json", "mcp-session-id": session_id}
        return Exchange(200, headers, body, session=session)

    def _stream_exchange(self, session: ServerSession) -> Exchange:
        return Exchange.event_stream(session, json_mode=self.json_response)

    # GET and DELETE ------------------------------------------------------------------

    def _get(self, request: HTTPRequest) -> Exchange:
        if not self._handshake_versions:
            return _text(405, "this server has no GET stream (2026-07-28)", {"allow": "POST"})
        if "text/event-stream" not in media_types(request.headers.get("accept")):
            return _text(406, "Accept must list text/event-stream")
        state, refusal = self._session_for(request)
        if state is None:
            assert refusal is not None
            return refusal
        last = request.headers.get("last-event-id")
        exchange = self._stream_exchange(state.session)
        exchange.json_mode = False
        exchange.headers = {"content-type": "text/event-stream", "cache-control": "no-cache"}
        if last is not None and state.resume(exchange, last) is not None:
            return exchange
        if state.get_stream is not None and not state.get_stream.finished:
            return _text(409, "a GET stream is already open for this session")
        state.open_get_stream(exchange)
        for item in state.backlog:
            self._deliver(exchange, item, state)
        state.backlog.clear()
        return exchange

    def _delete(self, request: HTTPRequest) -> Exchange:
        if not self._handshake_versions:
            return _text(405, "there are no sessions to end (2026-07-28)", {"allow": "POST"})
        state, refusal = self._session_for(request)
        if state is None:
            assert refusal is not None
            return refusal
        self.end_session(state.id)
        # Carrying the ended session lets the adapter forget it and cancel its handlers.
        return Exchange(200, {}, session=state.session)

    def _session_for(self, request: HTTPRequest) -> tuple[HandshakeSession | None, Exchange | None]:
        session_id = request.headers.get("mcp-session-id")
        if session_id is None:
            return None, json_error(
                400, None, ErrorCode.INVALID_REQUEST, "Mcp-Session-Id header is required"
            )
        state = self.sessions.get(session_id)
        if state is None:
            return None, json_error(
                404, None, ErrorCode.INVALID_REQUEST, "unknown or ended session"
            )
        self.sessions.touch(session_id)
        return state, None

    # Handshake sessions --------------------------------------------------------------

    def expire_idle(self, now: float) -> None:
        """Tell the time (seconds, any monotonic clock): handshake sessions quiet for
        longer than :attr:`session_idle_timeout` end. The adapters call it per request."""
        self.sessions.expire_idle(now)

    def end_session(self, session_id: str) -> None:
        """End a handshake session: its streams close, later requests get 404."""
        self.sessions.end(session_id)

    @property
    def session_ids(self) -> frozenset[str]:
        return self.sessions.ids

    def session_for(self, request: HTTPRequest) -> ServerSession | None:
        """The live session ``request`` names (``Mcp-Session-Id``), if any."""
        state = self.sessions.get(request.headers.get("mcp-session-id") or "")
        return state.session if state is not None else None

    def owns(self, session: ServerSession) -> bool:
        """Whether ``session`` is a live handshake session (not one request's own)."""
        return self.sessions.of(session) is not None

    # Sessions shared by replicas -------------------------------------------------------

    def session_record(self, session_id: str) -> dict[str, Any] | None:
        """What another replica needs to adopt the live session ``session_id``
        (:meth:`adopt_session`): its negotiated version and the client's
        ``initialize`` params; None if there is no such session here."""
        state = self.sessions.get(session_id)
        if state is None:
            return None
        return {
            "protocolVersion": state.session.protocol_version,
            "initialize": state.init_params,
        }

    def adopt_session(
        self, session_id: str, record: dict[str, Any], now: float | None = None
    ) -> ServerSession | None:
        """Serve here the session ``session_id`` another replica began, as
        :meth:`session_record` described it: a fresh session replays the client's
        handshake and is registered under that id (nothing goes to the client).
        None when the record does not bring a session to READY (malformed, or a
        version this server does not speak), or no room is left.  ``now``, if given,
        is passed to :meth:`expire_idle` first (the session is active from then on)."""
        if now is not None:
            self.expire_idle(now)
        existing = self.sessions.get(session_id)
        if existing is not None:
            return existing.session
        params = record.get("initialize")
        if not isinstance(params, dict):
            return None
        session = self._new_session()
        if self.relay is not None:
            session.start_request_ids_at(secrets.randbelow(_REQUEST_ID_SPACE))
        session.receive_message(
            {"jsonrpc": "2.0", "id": "adopt", "method": "initialize", "params": params}
        )
        session.receive_message({"jsonrpc": "2.0", "method": "notifications/initialized"})
        session.outgoing_to_send()  # the client had its answer from the replica it asked
        ready = session.state is SessionState.READY
        if not ready or session.protocol_version != record.get("protocolVersion"):
            session.close()
            return None
        if not self.sessions.make_room():  # after the checks: a bad record ends no session
            session.close()
            return None
        state = HandshakeSession(session_id, session, self.replay_memory, self.replay_streams)
        state.init_params = params
        self.sessions.add(state)
        return session

    def receive_relayed(self, session_id: str, message: dict[str, Any]) -> ServerSession | None:
        """A client message another replica relayed (:meth:`SessionRelay.client_message`):
        the session here that it is for, having received it (its output is not
        flushed yet); None when it is for no request of this copy."""
        state = self.sessions.get(session_id)
        if state is None:
            return None
        session = state.session
        if is_response(message):
            answered = message.get("id")
            if not is_request_id(answered) or answered not in session.pending_requests:
                return None
            session.receive_message(message)
            return session
        if message.get("method") != "notifications/cancelled" or not _names_open(
            message, session.open_requests
        ):
            return None
        session.receive_message(message)
        self._flush_then_end(state, [message["params"]])
        return session

    def deliver_relayed(self, session_id: str, message: Any) -> bool:
        """Put a message another replica relayed (:meth:`SessionRelay.server_message`)
        on the session's GET stream, if it is open here."""
        state = self.sessions.get(session_id)
        stream = None if state is None else state.target(Outgoing(message, b""))
        if state is None or stream is None or stream.stream_key != "get":
            return False
        self._deliver(stream, Outgoing(message, encode_message(message)), state)
        return True

    # Output routing -----------------------------------------------------------------

    def flush(self, session: ServerSession) -> None:
        """Route what ``session`` queued to the exchanges it belongs to, and wake them."""
        modern = self._stateless_exchange.get(id(session))
        state = self.sessions.of(session)
        for item in session.outgoing_to_send():
            if modern is not None:
                self._deliver(modern, item, None)
                continue
            if state is None:
                continue  # an ended session or a finished stateless request: nobody to tell
            target = state.target(item)
            if target is not None:
                self._deliver(target, item, state)
            elif is_response(item.message):
                continue
            elif self.relay is not None:
                # The GET stream may be open at another replica.
                self.relay.server_message(state.id, item.message)
            else:
                state.backlog.append(item)

    def _deliver(self, exchange: Exchange, item: Outgoing, state: HandshakeSession | None) -> None:
        if exchange.detached and state is not None:
            state.keep_for_resumption(exchange, item)
            return
        if exchange.finished:
            return
        if exchange.head_pending and not exchange.has_news:
            if self._answer_plainly(exchange, item):
                return
            exchange.open()  # something to stream first: this is an SSE stream after all
        numbered = state is not None and not exchange.json_mode
        event_id = exchange.next_event_id() if numbered else None
        chunk = exchange.deliver(item, event_id, self.max_unread)
        if state is not None and chunk is not None:
            # Kept even when the stream closed instead: it can be resumed (Last-Event-ID).
            state.remember(exchange.stream_key, exchange.seq, chunk)
        if state is not None and exchange.finished:
            for request_id in answered_ids(item.message):
                state.streams.pop(request_id, None)

    def _answer_plainly(self, exchange: Exchange, item: Outgoing) -> bool:
        """Turn a stream whose first output is its whole answer into a plain
        ``application/json`` response (see :meth:`Exchange.answer_plainly`)."""
        return exchange.answer_plainly(item)
