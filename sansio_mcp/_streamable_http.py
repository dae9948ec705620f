"""The Streamable HTTP transport, server side: whole HTTP requests in,
exchanges out.

One endpoint serves both eras.  A POST carrying a 2026-07-28 request is
served statelessly on a session of its own; an ``initialize`` POST starts a
handshake session named by ``Mcp-Session-Id``, which later POSTs, the GET
stream and DELETE must carry.  An :class:`Exchange` is one HTTP response
as the MCP layer sees it: an immediate reply, or a stream the adapter
writes as the session produces output (:meth:`StreamableHTTPServer.flush`).
This module routes; what it routes to lives beside it: the exchange
(``_exchange``), the table of handshake sessions and their replay buffers
(``_handshake_sessions``, ``_replay``: :attr:`StreamableHTTPServer.sessions`), the
requests served alone (``_single_requests``), the intake checks (``_http_intake``)
and the sessions replicas share (``_shared_sessions``:
:attr:`StreamableHTTPServer.replicas`).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable
from typing import Any

from ._bounds import seconds, whole
from ._deprecated import Moved
from ._errors import ErrorCode
from ._exchange import DEFAULT_MAX_UNREAD, Exchange, json_error, unread_refusal
from ._exchange import text_reply as _text
from ._handshake_sessions import (
    DEFAULT_MAX_SESSIONS,
    DEFAULT_REPLAY_BYTES,
    DEFAULT_REPLAY_MEMORY,
    DEFAULT_REPLAY_STREAMS,
    DEFAULT_SESSION_IDLE_TIMEOUT,
    HandshakeSessions,
)
from ._http import HTTPRequest, media_types
from ._http_headers import ToolHeaderParams
from ._http_intake import (
    LOOPBACK_HOSTS,
    check_host_and_origin,
    handshake_post_refusal,
    no_session_refusal,
    read_post,
    read_stateless_request,
    stateless_claim_refusal,
    stateless_only_refusal,
)
from ._jsonrpc import RequestId
from ._server_session import ServerSession
from ._shared_sessions import (
    DEFAULT_FOLLOW_CHECK,
    DEFAULT_MAX_RELAY_QUEUE,
    DEFAULT_STOP_GRACE,
    ReplicaSessions,
)
from ._single_requests import SingleRequests
from ._stateless import is_stateless_request
from ._versions import HANDSHAKE_REVISIONS, STATELESS_REVISIONS

__all__ = ["Exchange", "StreamableHTTPServer", "check_host_and_origin"]


class StreamableHTTPServer:
    """Routes HTTP requests to MCP sessions (both eras) and their output back.

    ``session_factory`` makes a configured :class:`ServerSession`.  By
    default only loopback ``Host`` and ``Origin`` values are accepted (DNS
    rebinding protection): pass ``allowed_hosts`` / ``allowed_origins`` to
    serve other names.

    A router of one's own (an intermediary's) subclasses it and uses the
    extension points only: :meth:`route`, :meth:`host_refusal`,
    :meth:`new_session`, :meth:`post_without_session`, :meth:`request_exchange`,
    :meth:`serving`, :attr:`handshake_versions`, :attr:`keeps_sessions`, and an
    exchange's :attr:`~Exchange.rewrite` and :attr:`~Exchange.error_statuses`.
    What the runtime asks of any router is :meth:`handle`, :meth:`flush`, :meth:`owns`,
    :meth:`expire_idle` and :meth:`session_for`.
    """

    #: Whether this router keeps handshake sessions.  False: an ``initialize`` is
    #: answered without ``Mcp-Session-Id`` (its session closed), so clients send
    #: :meth:`post_without_session` their later requests; nothing is shared by replicas.
    keeps_sessions = True

    # Deprecated spellings, kept for one release: each warns and uses its new place.
    max_sessions = Moved("sessions.max_sessions")
    session_idle_timeout = Moved("sessions.idle_timeout")
    replay_memory = Moved("sessions.replay_memory")
    replay_streams = Moved("sessions.replay_streams")
    session_ids = Moved("sessions.ids")
    end_session = Moved("sessions.end")
    relay = Moved("replicas.relay")
    session_record = Moved("replicas.record")
    adopt_session = Moved("replicas.adopt")
    receive_relayed = Moved("replicas.receive")
    deliver_relayed = Moved("replicas.deliver")

    def __init__(
        self,
        session_factory: Callable[[], ServerSession],
        *,
        endpoint: str = "/mcp",
        allowed_hosts: Iterable[str] | None = None,
        allowed_origins: Iterable[str] | None = None,
        json_response: bool = False,
        new_session_id: Callable[[], str] = lambda: secrets.token_hex(16),
        replay_memory: int = DEFAULT_REPLAY_MEMORY,
        replay_streams: int = DEFAULT_REPLAY_STREAMS,
        tool_input_schema: Callable[[str], Any] | None = None,
        retry_interval: float | None = 1.0,
        max_unread: int = DEFAULT_MAX_UNREAD,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        session_idle_timeout: float | None = DEFAULT_SESSION_IDLE_TIMEOUT,
        replay_bytes: int = DEFAULT_REPLAY_BYTES,
        follow_check: float = DEFAULT_FOLLOW_CHECK,
        max_queue: int = DEFAULT_MAX_RELAY_QUEUE,
        stop_grace: float = DEFAULT_STOP_GRACE,
    ) -> None:
        _check_limits(
            max_sessions=max_sessions,
            session_idle_timeout=session_idle_timeout,
            replay_memory=replay_memory,
            replay_streams=replay_streams,
            max_unread=max_unread,
            retry_interval=retry_interval,
        )
        self.session_factory = session_factory
        #: The live handshake sessions, with their limits and expiry.
        self.sessions = HandshakeSessions(
            max_sessions, session_idle_timeout, replay_memory, replay_streams, replay_bytes
        )
        #: This router's side of handshake sessions shared by replicas.
        self.replicas = ReplicaSessions(self)
        self.replicas.follow_check = follow_check
        self.replicas.max_queue = max_queue
        self.replicas.stop_grace = stop_grace
        #: The requests served on a session of their own, with their exchanges.
        self.single_requests = SingleRequests()
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
        # The versions are the sessions': the first is made now to learn them, and
        # serves the first request that needs a session.
        self._spare: ServerSession | None = session_factory()
        versions = self._spare.supported_versions
        #: The handshake-era revisions the sessions speak (none: a stateless server).
        self.handshake_versions = tuple(v for v in versions if v in HANDSHAKE_REVISIONS)
        self._stateless_versions = tuple(v for v in versions if v in STATELESS_REVISIONS)

    # Entry and extension points -----------------------------------------------------

    def handle(self, request: HTTPRequest, now: float | None = None) -> Exchange:
        """The exchange that answers ``request``; ``now``, if given, is passed to
        :meth:`expire_idle` first."""
        if now is not None:
            self.expire_idle(now)
        refusal = self.host_refusal(request)
        return refusal if refusal is not None else self.route(request)

    def host_refusal(self, request: HTTPRequest) -> Exchange | None:
        """What :meth:`handle` answers first when Host or Origin is not allowed (DNS
        rebinding protection: 400 or 403); None when both are."""
        return check_host_and_origin(request, self.allowed_hosts, self.allowed_origins)

    def route(self, request: HTTPRequest) -> Exchange:
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
        allow = "POST, GET, DELETE" if self.handshake_versions else "POST"
        return _text(405, f"{request.method} is not supported here", {"allow": allow})

    def new_session(self) -> ServerSession:
        """The session for an ``initialize`` or a request served alone: every session
        the router serves on comes from here (a subclass may prepare it, calling this)."""
        spare, self._spare = self._spare, None
        return spare if spare is not None else self.session_factory()

    def post_without_session(
        self, request: HTTPRequest, obj: Any, messages: list[dict[str, Any]]
    ) -> Exchange:
        """A handshake-era POST (``obj``, its ``messages``) with no ``Mcp-Session-Id``
        and no ``initialize``: 400.  A router that keeps no sessions (:attr:`keeps_sessions`
        False) serves them here (on :meth:`new_session`, with :meth:`request_exchange`)."""
        return no_session_refusal(request)

    def request_exchange(self, session: ServerSession, request_id: RequestId) -> Exchange:
        """The exchange of request ``request_id`` served on ``session``, a session of its
        own (as a stateless request is): :meth:`flush` routes ``session``'s output to it,
        it waits for the answer, and its closing cancels the request."""
        return self.single_requests.open(session, request_id, self.json_response)

    def serving(self, session: ServerSession) -> bool:
        """Whether ``session`` serves a request alone whose exchange is open."""
        return id(session) in self.single_requests.by_session  # (of(), a call less)

    # POST -------------------------------------------------------------------------

    def _post(self, request: HTTPRequest) -> Exchange:
        body = read_post(request)
        if isinstance(body, Exchange):
            return body
        obj, messages = body.obj, body.messages
        first = messages[0]
        params = first.get("params")
        single = not isinstance(obj, list)
        if single and isinstance(params, dict) and is_stateless_request(params):
            return self._post_stateless(request, first, params)
        refusal = stateless_claim_refusal(request, first, self._stateless_versions)
        if single and refusal is not None:
            return refusal
        return self._post_handshake(request, obj, messages)

    def _post_stateless(
        self, request: HTTPRequest, message: dict[str, Any], params: dict[str, Any]
    ) -> Exchange:
        if "id" not in message:
            # The core protocol defines no client notification over HTTP in this revision.
            session = self.new_session()
            session.receive_message(message)
            session.messages_to_send()
            return Exchange(202, {})
        meta = read_stateless_request(request, message, params, self.header_params)
        if isinstance(meta, Exchange):
            return meta
        return self.single_requests.serve_stateless(
            self.new_session(), message, self.json_response, self.max_unread, meta
        )

    def _post_handshake(
        self, request: HTTPRequest, obj: Any, messages: list[dict[str, Any]]
    ) -> Exchange:
        if not self.handshake_versions:
            return stateless_only_refusal(messages[0])
        initialize = False
        for message in messages:  # (a loop: no generator for the single message most are)
            if message.get("method") == "initialize":
                initialize = True
                break
        if initialize:
            if isinstance(obj, list):
                return json_error(
                    400, None, ErrorCode.INVALID_REQUEST, "initialize must not be part of a batch"
                )
            return self._initialize(messages[0])
        if "mcp-session-id" not in request.headers:
            return self.post_without_session(request, obj, messages)
        state = self.sessions.named(request.headers.get("mcp-session-id"))
        if state is None:
            return no_session_refusal(request)
        session = state.session
        refusal = handshake_post_refusal(
            request, obj, session.revision, self.handshake_versions
        ) or unread_refusal(state.get_stream, self.max_unread)
        if refusal is not None:
            return refusal
        obj, messages = self.replicas.split(state, obj, messages)
        if not messages:
            return Exchange(202, {})
        return state.receive(obj, messages, self.flush, self.json_response, self.retry_interval)

    def _initialize(self, message: dict[str, Any]) -> Exchange:
        if self.keeps_sessions and not self.sessions.make_room():
            held = f"this server holds its {self.sessions.max_sessions} sessions"
            return _text(503, held, {"retry-after": "5"})
        session = self.replicas.new_copy()
        session.receive_message(message)
        out = session.outgoing_to_send()
        response = out[-1].message if out else None
        headers = {"content-type": "application/json"}
        body = out[-1].data if out else b""
        if not self.keeps_sessions:
            session.close()
        if not self.keeps_sessions or not (isinstance(response, dict) and "result" in response):
            return Exchange(400 if response is None else 200, headers, body)
        self.replicas.initialized(session)
        state = self.sessions.begin(self.new_session_id(), session, message.get("params"))
        headers["mcp-session-id"] = state.id
        return Exchange(200, headers, body, session=session)

    # GET and DELETE ------------------------------------------------------------------

    def _get(self, request: HTTPRequest) -> Exchange:
        if not self.handshake_versions:
            return _text(405, "this server has no GET stream (2026-07-28)", {"allow": "POST"})
        if "text/event-stream" not in media_types(request.headers.get("accept")):
            return _text(406, "Accept must list text/event-stream")
        state = self.sessions.named(request.headers.get("mcp-session-id"))
        if state is None:
            return no_session_refusal(request)
        exchange = state.get(request.headers.get("last-event-id"), self.max_unread)
        return exchange or _text(409, "a GET stream is already open for this session")

    def _delete(self, request: HTTPRequest) -> Exchange:
        if not self.handshake_versions:
            return _text(405, "there are no sessions to end (2026-07-28)", {"allow": "POST"})
        state = self.sessions.named(request.headers.get("mcp-session-id"))
        if state is None:
            return no_session_refusal(request)
        self.sessions.end(state.id)
        # Carrying the ended session lets the adapter forget it and cancel its handlers.
        return Exchange(200, {}, session=state.session)

    # What the runtime asks of any router (``sansio_mcp.runtime.hosting.Router``) -----

    def expire_idle(self, now: float) -> None:
        """Tell the time (seconds, any monotonic clock): handshake sessions quiet for
        longer than their idle timeout end (:meth:`HandshakeSessions.expire_idle`)."""
        self.sessions.expire_idle(now)

    def session_for(self, request: HTTPRequest) -> ServerSession | None:
        """The live session ``request`` names (``Mcp-Session-Id``), if any."""
        state = self.sessions.get(request.headers.get("mcp-session-id") or "")
        return state.session if state is not None else None

    def owns(self, session: ServerSession) -> bool:
        """Whether ``session`` outlives its exchange: a live handshake session (not
        one request's own).  A subclass keeping other sessions says so here."""
        return self.sessions.of(session) is not None

    # Output routing -----------------------------------------------------------------

    def flush(self, session: ServerSession) -> None:
        """Route what ``session`` queued to the exchanges it belongs to, and wake them."""
        items = session.outgoing_to_send()
        if not items:
            return  # (most flushes of a request: before and after its handler's start)
        alone = self.single_requests.by_session.get(id(session))  # of(), a call less
        state = self.sessions.of(session) if alone is None else None
        relay = self.replicas.relay
        elsewhere = relay.server_message if relay is not None else None
        for item in items:
            if alone is not None:
                alone.send(item, self.max_unread)
            elif state is not None:  # else an ended session or a finished request
                state.route(item, self.max_unread, elsewhere)


def _check_limits(
    *,
    max_sessions: int,
    session_idle_timeout: float | None,
    replay_memory: int,
    replay_streams: int,
    max_unread: int,
    retry_interval: float | None,
) -> None:
    """A ValueError naming the first keyword whose value no router can work with (the
    sessions' ``replay_bytes`` and the replicas' ``follow_check``, ``max_queue`` and
    ``stop_grace`` are checked by their setters)."""
    for name, value in (("max_sessions", max_sessions), ("max_unread", max_unread)):
        if not whole(value, 1):
            raise ValueError(f"{name} must be a positive integer, not {value!r}")
    for name, value in (("replay_memory", replay_memory), ("replay_streams", replay_streams)):
        if not whole(value, 0):
            raise ValueError(f"{name} must be an integer of at least 0, not {value!r}")
    idle = session_idle_timeout
    if idle is not None and not seconds(idle, positive=True):
        raise ValueError(
            "session_idle_timeout must be a positive, finite number of seconds or None, "
            f"not {idle!r}"
        )
    if retry_interval is not None and not seconds(retry_interval):
        raise ValueError(
            "retry_interval must be a finite number of seconds of at least 0 or None, "
            f"not {retry_interval!r}"
        )
