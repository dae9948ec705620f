"""What both MCP session machines share: :class:`Session`.

The roles are :class:`~sansio_mcp._client_session.ClientSession` and
:class:`~sansio_mcp._server_session.ServerSession`; a session's open requests
are tracked by its :class:`~sansio_mcp._requests.RequestTracker`.

A session is pure bookkeeping.  Feed it what arrived (``receive_data`` for a
byte stream, ``receive_message`` for an already-framed message), read
:meth:`~Session.next_event` until it returns :data:`NEED_DATA`, act through
its methods (``send_request``, ``respond``, ``cancel`` …) and ship what
``data_to_send`` / ``messages_to_send`` return.  Time is passed in as
``now``; nothing here reads a clock or touches I/O.
"""

from __future__ import annotations

import copy
import functools
from collections import deque
from collections.abc import Callable, Container, Iterable, Sequence
from typing import Any

from . import _json
from ._errors import (
    ErrorCode,
    LocalProtocolError,
    MCPError,
    RemoteProtocolError,
    RequestTimeout,
)
from ._events import (
    ConnectionClosed,
    Event,
    NotificationReceived,
    ProtocolViolation,
    RequestReceived,
    request_received,
)
from ._gates import RoleGates
from ._jsonrpc import (
    JSONRPCError,
    JSONRPCMessage,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    RequestId,
    message_to_obj,
    parse_message,
)
from ._ndjson import HEAD_KEPT, NEED_DATA, NdjsonFramer, message_identity, oversized_message
from ._outbox import Batch, Outbox, Outgoing, encode_message
from ._requests import (
    OutgoingRequest,
    RequestTracker,
    progress_token_of,
    with_progress_token,
)
from ._state import (
    STATE_CLOSED,
    Role,
    SessionState,
    Trigger,
    next_state,
    trigger_for,
)
from ._versions import HANDSHAKE_REVISIONS, LATEST_STATELESS_REVISION, REVISIONS, Revision

__all__ = ["MAX_BAD_LINES", "MAX_BAD_LINES_BEFORE_FIRST", "Session"]

#: Lines in a row that are not JSON-RPC after which an NDJSON (stdio) peer is given
#: up on: a program writing its logs, or anything else, to stdout is no MCP peer, and
#: answering each of its lines for ever would keep us from all other work.
MAX_BAD_LINES = 200
_NOT_TOLD: tuple[bool, RequestId | None] = (False, None)

#: The same before the peer's first JSON line: a program that has not yet said one
#: word of JSON-RPC is given up on sooner, its first lines named in the reason.
MAX_BAD_LINES_BEFORE_FIRST = 20


@functools.lru_cache(maxsize=32)
def checked_versions(versions: tuple[str, ...]) -> tuple[str, ...]:
    """``versions`` oldest first; LocalProtocolError if one is unknown or none given.
    Cached: every session a server makes (one per stateless request) passes the same."""
    unknown = [v for v in versions if v not in REVISIONS]
    if unknown or not versions:
        raise LocalProtocolError(
            f"unsupported protocol versions {unknown}; known: {list(REVISIONS)}"
        )
    return tuple(sorted(versions))


class Session:
    """Shared machinery of both roles. Use :class:`ClientSession` or :class:`ServerSession`."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._requests_inline = cls.receive_message is Session.receive_message

    role: Role
    _gates: RoleGates

    # What a session starts with and changes only when the occasion comes is a class
    # default, and what only a byte stream needs is made when first fed: a server
    # makes a session per stateless request, most of which never change these.
    max_bad_lines = MAX_BAD_LINES
    _bad_lines = 0
    #: Whether a request line may go from :meth:`receive_data` straight to
    #: :meth:`_on_request`: not when a subclass refines :meth:`receive_message`,
    #: which then sees every message, as it did before that shortcut.
    _requests_inline = True
    #: The first few lines of the current run of bad ones, shortened, for the reason.
    _bad_samples: Sequence[str] = ()
    #: Ids of the peer's still open that are not requests being served (a
    #: server's open subscriptions/listen): a new request may not reuse them.
    _open_elsewhere: Container[RequestId] = ()
    #: The methods the session answers itself: ping, initialize and those
    #: :meth:`_handle_locally` may serve (the others skip the calls).
    _local_methods: frozenset[str] = frozenset({"ping", "initialize"})
    #: Whether :meth:`_served_elsewhere` sorts out requests of another era (servers),
    #: asked of a request with a ``_meta`` or one before the handshake named a revision.
    _sorts_eras = False
    #: The methods whose successful answer :meth:`_after_response` records.
    _bookkept_methods: frozenset[str] = frozenset()
    #: Whether the peer has sent one JSON line yet (it speaks JSON at least).
    heard_from_peer = False
    #: Why the session closed, when it closed itself (see :meth:`close`).
    close_reason: str | None = None
    state = SessionState.IDLE
    #: The negotiated revision, once known.
    revision: Revision | None = None
    peer_capabilities: dict[str, Any] | None = None
    peer_info: dict[str, Any] | None = None
    _tracer: Callable[[str, Any], None] | None = None
    # What the transport said of the message being received: (whether it tells,
    # the request of ours it came with).
    _carried_by: tuple[bool, RequestId | None] = _NOT_TOLD
    # The NDJSON framer, made by the first receive_data (HTTP sessions have none).
    _ndjson: NdjsonFramer | None = None

    def __init__(
        self,
        *,
        capabilities: dict[str, Any] | None = None,
        info: dict[str, Any] | None = None,
        supported_versions: Iterable[str] = HANDSHAKE_REVISIONS,
        max_message_size: int = _json.DEFAULT_MAX_MESSAGE_SIZE,
        max_depth: int = _json.DEFAULT_MAX_DEPTH,
    ) -> None:
        #: Versions we accept, oldest first.
        self.supported_versions: tuple[str, ...] = checked_versions(tuple(supported_versions))
        self._capabilities: dict[str, Any] = dict(capabilities or {})
        self.info: dict[str, Any] = dict(info or {})
        self.max_message_size = max_message_size
        self.max_depth = max_depth
        self._start()

    def _start(self) -> None:
        """Make the session's own bookkeeping (what a copy does not share)."""
        self._events: deque[Event] = deque()
        self._outbox = Outbox()
        self._requests = RequestTracker(self._events)

    # ------------------------------------------------------------------ state

    #: Whether ``_capabilities`` is shared with a copy (or its original): the
    #: ``capabilities`` property makes them this session's own when first asked for.
    _capabilities_shared = False

    @property
    def capabilities(self) -> dict[str, Any]:
        """What this side advertises: objects of its own, nested ones too (changing them
        changes this session only)."""
        if self._capabilities_shared:
            self._capabilities = copy.deepcopy(self._capabilities)
            self._capabilities_shared = False
        return self._capabilities

    @capabilities.setter
    def capabilities(self, capabilities: dict[str, Any]) -> None:
        self._capabilities = capabilities
        self._capabilities_shared = False

    @property
    def protocol_version(self) -> str | None:
        return self.revision.name if self.revision else None

    @property
    def tracer(self) -> Callable[[str, Any], None] | None:
        """Called with ``("receive", message)`` for each message fed to
        :meth:`receive_message` and ``("send", message)`` for each one taken to
        send (a batch is one list): to log or record the traffic.  It is given no
        time: whoever records it stamps it."""
        return self._tracer

    @tracer.setter
    def tracer(self, tracer: Callable[[str, Any], None] | None) -> None:
        self._tracer = self._outbox.tracer = tracer

    @property
    def pending_requests(self) -> frozenset[RequestId]:
        """Ids of our requests that have not ended yet."""
        return self._requests.pending

    def start_request_ids_at(self, first: int) -> None:
        """Number our next requests from ``first`` on (copies of one session on
        several replicas start far apart, so that an answer names one question)."""
        self._requests.start_ids_at(first)

    @property
    def open_requests(self) -> frozenset[RequestId]:
        """Ids of the peer's requests we have not answered yet."""
        return frozenset(self._requests.incoming)

    def _transition(self, trigger: Trigger, *, local: bool) -> None:
        new = next_state(self.role, self.state, trigger)
        if new is None:
            message = f"{trigger.value} is not allowed in state {self.state.name}"
            if self.close_reason is not None:
                message += f": {self.close_reason}"
            if local:
                raise LocalProtocolError(message)
            raise RemoteProtocolError(message, code=ErrorCode.INVALID_REQUEST)
        self.state = new

    def _allowed(self, trigger: Trigger) -> bool:
        return next_state(self.role, self.state, trigger) is not None

    # ---------------------------------------------------------------- receive

    def receive_data(self, data: bytes | bytearray) -> None:
        """Feed bytes of an NDJSON stream (stdio); ``b""`` means end of input."""
        framer = self._ndjson
        if framer is None:
            framer = self._ndjson = NdjsonFramer(self.max_message_size)
        for line in framer.lines(data):
            if self.state is STATE_CLOSED:
                break  # given up on (see _bad_line): the rest is not read
            if type(line) is not bytes and isinstance(line, RemoteProtocolError):
                self._violation(line)
                self._requests.fail_malformed(line)  # an oversized answer ends its request
                self._bad_line(None)
                continue
            try:
                obj = _json.loads(line, max_depth=self.max_depth)
            except RemoteProtocolError as exc:
                self._unreadable(exc, line)
                self._bad_line(line)
                continue
            if self._bad_lines:
                self._bad_lines = 0
                self._bad_samples = ()
            # receive_message's request fast path, inline (a frame fewer per line; the
            # state is open, no transport relation is told): a test holds the two equal.
            if (
                type(obj) is dict
                and self._tracer is None
                and self._requests_inline
                and obj.get("jsonrpc") == "2.0"
            ):
                method = obj.get("method")
                raw_id = obj.get("id")
                if (
                    type(method) is str
                    and (type(raw_id) is str or type(raw_id) is int)
                    and "result" not in obj
                    and "error" not in obj
                ):
                    params = obj.get("params")
                    if type(params) is dict or "params" not in obj:
                        self.heard_from_peer = True
                        self._on_request(raw_id, method, params)
                        continue
            self.receive_message(obj)
        if not data and framer.eof:  # only an empty chunk ends the input
            self.close()

    def _bad_line(self, line: bytes | None) -> None:
        self._bad_lines += 1
        if line is not None and len(self._bad_samples) < 3:
            text = line[:80].decode("utf-8", "replace")
            self._bad_samples = [*self._bad_samples, text + ("\u2026" if len(line) > 80 else "")]
        limit = self.max_bad_lines
        if not self.heard_from_peer:
            limit = min(limit, MAX_BAD_LINES_BEFORE_FIRST)
        if self._bad_lines >= limit and self.state is not STATE_CLOSED:
            began = ", ".join(repr(sample) for sample in self._bad_samples)
            reason = (
                f"the peer wrote {self._bad_lines} lines in a row that are not JSON-RPC "
                f"(is it an MCP server?{f' its output began {began}' if began else ''}); "
                "the connection is given up"
            )
            self._events.append(ProtocolViolation(RemoteProtocolError(reason)))
            self.close(reason)

    def receive_message(
        self,
        obj: Any,
        *,
        relation_known: bool = False,
        related_request: RequestId | None = None,
    ) -> None:
        """Feed one decoded JSON-RPC message (or a batch, as a list).

        A transport that tells which of our requests a message came with (the
        response stream of a Streamable HTTP POST) says so with ``relation_known``
        and the request's wire id as ``related_request`` (None: with none, the GET
        stream); a request of the peer's then carries it (:class:`RequestReceived`).
        """
        if self._tracer is not None:
            self._tracer("receive", obj)
        if self.state is STATE_CLOSED:
            return
        self.heard_from_peer = True
        if relation_known:
            pending = None if related_request is None else self._requests.on_wire(related_request)
            self._carried_by = (True, pending.origin if pending else related_request)
        try:
            # A well-formed request (what a server mostly gets) goes straight to
            # _on_request: classified as parse_message's fast path classifies it (a test
            # holds the two equal), without the JSONRPCRequest record it would make.
            if type(obj) is dict and obj.get("jsonrpc") == "2.0":
                method = obj.get("method")
                raw_id = obj.get("id")
                if (
                    type(method) is str
                    and (type(raw_id) is str or type(raw_id) is int)
                    and "result" not in obj
                    and "error" not in obj
                ):
                    params = obj.get("params")
                    if type(params) is dict or "params" not in obj:
                        self._on_request(raw_id, method, params)
                        return
            elif isinstance(obj, list):
                self._receive_batch(obj)
                return
            try:
                message = parse_message(obj)
            except RemoteProtocolError as exc:
                self._violation(exc)
                self._requests.fail_malformed(exc)
                return
            self._dispatch(message)
        finally:
            self._carried_by = _NOT_TOLD

    def receive_text(self, text: str | bytes) -> None:
        """Feed one whole JSON text (an HTTP body, a WebSocket message)."""
        size = len(text) if isinstance(text, bytes) else len(text.encode("utf-8", "surrogatepass"))
        if size > self.max_message_size:
            head = text[:HEAD_KEPT] if isinstance(text, bytes) else text[:HEAD_KEPT].encode()
            error = oversized_message(head, size, self.max_message_size)
            self._violation(error)
            self._requests.fail_malformed(error)
            return
        try:
            obj = _json.loads(text, max_depth=self.max_depth)
        except RemoteProtocolError as exc:
            raw = text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
            self._unreadable(exc, raw)
            return
        self.receive_message(obj)

    def _unreadable(self, error: RemoteProtocolError, text: bytes) -> None:
        """``text`` is no JSON we take: answered with ``error``, unless it answers one
        of our requests (see :meth:`end_unreadable_answer`)."""
        if not self.end_unreadable_answer(text, error):
            error.answer = True
            self._violation(error)

    def end_unreadable_answer(self, text: bytes, error: RemoteProtocolError) -> bool:
        """A message that could not be parsed (``error``: invalid JSON, a NaN, a number
        beyond a float, nesting too deep): when ``text`` shows it answers one of our
        requests (its top-level ``id``, no ``method``), that request ends with the
        error at once rather than wait for an answer that came; True then.  For a
        transport that parses its own frames (an HTTP body, an SSE event)."""
        request_id, is_request = message_identity(text)
        if request_id is None or is_request or self._requests.on_wire(request_id) is None:
            return False
        error.request_id = request_id
        self._violation(error)
        self._requests.fail_malformed(error)
        return True

    def next_event(self) -> Event | type[NEED_DATA]:
        """The next event, or :data:`NEED_DATA` when there is none."""
        if self._events:
            return self._events.popleft()
        return NEED_DATA

    def event_queue(self) -> deque[Event]:
        """The queue :meth:`next_event` takes from, oldest first, the same for the
        session's life: what drains every event as it comes (the runtime's driver)
        pops it itself, a call per event fewer."""
        return self._events

    def _receive_batch(self, items: list[Any]) -> None:
        if not items:
            self._violation(self._answerable("an empty batch is not a valid request"))
            return
        if self.revision is None or not self.revision.batching:
            where = f"revision {self.revision}" if self.revision else "before initialization"
            self._violation(self._answerable(f"JSON-RPC batches are not allowed {where}"))
            return
        batch = Batch()
        messages: list[JSONRPCMessage] = []
        for item in items:
            try:
                message = parse_message(item)
            except RemoteProtocolError as exc:
                self._events.append(ProtocolViolation(exc))
                if exc.answer:
                    batch.add(self._error_obj(exc.request_id, exc))
                self._requests.fail_malformed(exc)
                continue
            if isinstance(message, JSONRPCRequest):
                refusal = batch.refusal(message, self._id_conflict(message.id))
                if refusal is not None:
                    batch.add(self._refusal(message.id, refusal))
                    continue
                self._outbox.expect(batch, message.id)
            messages.append(message)
        for message in messages:
            self._dispatch(message)
        self._outbox.flush(batch)

    @staticmethod
    def _answerable(message: str, code: int = ErrorCode.INVALID_REQUEST) -> RemoteProtocolError:
        error = RemoteProtocolError(message, code=code)
        error.answer = True
        return error

    def _violation(self, error: RemoteProtocolError) -> None:
        if self.state is STATE_CLOSED:
            return  # input after close is ignored, as receive_message does
        self._events.append(ProtocolViolation(error))
        if error.answer:
            self._outbox.answer(error.request_id, self._error_obj(error.request_id, error))

    def _dispatch(self, message: JSONRPCMessage) -> None:
        if isinstance(message, JSONRPCRequest):
            self._on_request(message.id, message.method, message.params)
        elif isinstance(message, JSONRPCNotification):
            self._on_notification(message)
        elif isinstance(message, JSONRPCResponse):
            self._on_response(message.id, message.result, None)
        else:
            self._on_response(message.id, None, message.error)

    def _id_conflict(self, request_id: RequestId) -> MCPError | None:
        """Why the peer may not use ``request_id`` for a new request, in either era
        (servers add the ids of open subscriptions)."""
        return self._requests.id_conflict(request_id, self._open_elsewhere)

    def _on_request(
        self, request_id: RequestId, method: str, params: dict[str, Any] | None
    ) -> None:
        """A request of the peer's (``params`` as it came: None when it had none)."""
        requests = self._requests
        incoming = requests.incoming
        if (
            request_id in incoming
            or request_id in self._open_elsewhere
            or requests.cancelled_incoming is not None
        ):
            duplicate = requests.id_conflict(request_id, self._open_elsewhere)
            if duplicate is not None:
                # Straight to the outbox: Outbox.answer would route this error into
                # the batch of the original request that owns the id.
                self._outbox.append(self._refusal(request_id, duplicate), request_id)
                return
        if params is None:
            params = {}
        # A server sorts out a request of another era (a 2026-07-28 one, by its _meta;
        # any before the handshake named a revision): the others skip the call.
        if (
            self._sorts_eras
            and ("_meta" in params or self.revision is None)
            and self._served_elsewhere(request_id, method, params)
        ):
            return
        # The gate: a request it let through before in this revision and state is let
        # through again by the same tests, inline (see RoleGates.plain); the others,
        # and any that fails them, go through it all (which words the error).
        after = None
        plain = self._gates.plain.get(method)
        if plain is not None:
            revision, state, capability, after, fields = plain
            if revision is not self.revision or state is not self.state:
                after = None
            elif capability is not None:
                capabilities = self._capabilities
                node = capabilities.get(capability) if type(capabilities) is dict else None
                if node is None or node is False:
                    after = None
            for field, kind, required in fields:
                if field in params:
                    if not isinstance(params[field], kind):
                        after = None
                        break
                elif required:
                    after = None
                    break
        if after is None:
            try:
                after = self._gates.check_incoming_request(
                    method, params, self.revision, self._capabilities, self.state
                )
            except MCPError as error:
                self._outbox.answer(request_id, self._refusal(request_id, error))
                return
        self.state = after
        if method in self._local_methods:  # one test for most requests, which are none
            if method == "ping":
                self._outbox.answer(request_id, {"jsonrpc": "2.0", "id": request_id, "result": {}})
                return
            if method == "initialize":
                self._on_initialize(request_id, params)
                return
            if self._handle_locally(request_id, method, params):
                return
        # Most requests carry no _meta: their token is known without reading it.
        token = progress_token_of(params) if "_meta" in params else None
        known, related = self._carried_by
        # One record per request: the event the application gets is what the session
        # keeps while the request is open.
        event = request_received(request_id, method, params, token, known, related)
        incoming[request_id] = event
        self._events.append(event)

    def _served_elsewhere(self, request_id: RequestId, method: str, params: dict[str, Any]) -> bool:
        """Serve a request that is not this handshake session's (see ``_sorts_eras``);
        whether it was one."""
        return False

    def _on_notification(self, notification: JSONRPCNotification) -> None:
        method, params = notification.method, notification.params or {}
        trigger = trigger_for(method, is_request=False, sending=False)
        try:
            if not self._allowed(trigger):
                raise RemoteProtocolError(
                    f"notification {method!r} is not allowed while the session is "
                    f"{self.state.name.lower()}"
                )
            self._gates.check_incoming_notification(method, params, self.revision)
        except RemoteProtocolError as error:
            self._events.append(ProtocolViolation(error))
            return
        self._transition(trigger, local=False)
        if method == "notifications/cancelled":
            self._on_cancelled(params)
        elif method == "notifications/progress":
            self._requests.on_progress(params)
        elif method == "notifications/initialized":
            self._on_initialized()
        else:
            self._events.append(NotificationReceived(method, params))

    def _on_cancelled(self, params: dict[str, Any]) -> None:
        request_id = self._requests.on_cancelled(params)
        if request_id is not None:
            self._outbox.drop(request_id)

    def _on_response(
        self, request_id: RequestId | None, result: dict[str, Any] | None, error: MCPError | None
    ) -> None:
        pending = self._requests.answered(request_id, error)
        if pending is not None:
            self._complete(pending, result, error)

    def fail_request(self, wire_id: RequestId, error: MCPError) -> None:
        """The transport could not carry one of our requests, or its answer (an HTTP
        failure): end it with ``error``, as an error response would, but with the
        transport's own error rather than one a peer could have sent."""
        self._on_response(wire_id, None, error)

    def _complete(
        self, pending: OutgoingRequest, result: dict[str, Any] | None, error: MCPError | None
    ) -> None:
        """Report the end of one of our requests (clients refine this)."""
        self._requests.complete(pending, result, error)

    # Role hooks ---------------------------------------------------------------

    def _on_initialize(self, request_id: RequestId, params: dict[str, Any]) -> None:
        raise NotImplementedError  # pragma: no cover - clients reject it earlier

    def _handle_locally(self, request_id: RequestId, method: str, params: dict[str, Any]) -> bool:
        """Answer a request the core serves itself (one of ``_local_methods``); True if it did."""
        return False

    def _on_initialized(self) -> None:
        raise NotImplementedError  # pragma: no cover - servers only

    def _decorate_params(
        self, method: str, params: dict[str, Any] | None
    ) -> tuple[dict[str, Any] | None, str | None]:
        """Params as sent, and the stateless revision a modern request goes out
        at (None: a handshake-session request; clients refine this)."""
        return params, None

    def _on_timeout(self, pending: OutgoingRequest, now: float) -> bool:
        """Handle an expired request specially; True if handled (clients refine this)."""
        return False

    def _result_message(
        self, request_id: RequestId, incoming: RequestReceived, result: dict[str, Any]
    ) -> dict[str, Any]:
        """The response message for a result to a 2026-07-28 request (one with
        ``meta``; servers refine this)."""
        return {"jsonrpc": "2.0", "id": request_id, "result": result}

    # ------------------------------------------------------------------- send

    def send_request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        now: float | None = None,
        timeout: float | None = None,
        progress: bool = False,
        experimental: bool = False,
        related_request: RequestId | None = None,
    ) -> RequestId:
        """Queue a request and return its id.

        ``timeout`` (seconds, needs ``now``) arms a deadline that
        :meth:`handle_timer` enforces.  ``progress`` asks the peer for
        progress notifications (they arrive as :class:`ProgressReceived`).
        ``experimental`` lets a method outside the negotiated revision through.
        ``related_request`` names the peer request this one serves (a transport
        with several streams sends it on that request's stream).
        """
        if method == "initialize":
            raise LocalProtocolError("use ClientSession.initialize() to start the handshake")
        if params is not None and not isinstance(params, dict):
            raise LocalProtocolError("params must be a dict")
        if params is not None and "_meta" in params and not isinstance(params["_meta"], dict):
            raise LocalProtocolError("params._meta must be a dict")
        if self.state is STATE_CLOSED:
            raise LocalProtocolError("the session is closed")
        self._gates.check_outgoing_request(
            method, params or {}, self.revision, self.peer_capabilities, experimental=experimental
        )
        return self._send_request(
            method,
            params,
            now=now,
            timeout=timeout,
            progress=progress,
            related_request=related_request,
        )

    def _send_request(
        self,
        method: str,
        params: dict[str, Any] | None,
        *,
        now: float | None,
        timeout: float | None,
        progress: bool,
        trigger: Trigger | None = None,
        origin: RequestId | None = None,
        rounds: int = 1,
        deadline: float | None = None,
        token: str | int | None = None,
        extra: dict[str, Any] | None = None,
        related_request: RequestId | None = None,
    ) -> RequestId:
        if timeout is not None and now is None:
            raise LocalProtocolError("a timeout needs the current time: pass now=")
        trigger = trigger or trigger_for(method, is_request=True, sending=True)
        if not self._allowed(trigger):
            self._transition(trigger, local=True)  # raises, saying why
        # Nothing changes until the message is encoded: one that is not JSON (a NaN,
        # say) is refused with the session as it was.
        request_id = self._requests.next_id(take=False)
        origin = request_id if origin is None else origin
        asks_progress = progress and token is None
        if asks_progress:
            token = origin  # the progress token is the id of the request it reports on
        wire_params = with_progress_token(params, token)
        if extra:
            wire_params = {**(wire_params or {}), **extra}
        wire_params, version = self._decorate_params(method, wire_params)
        obj: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if wire_params is not None:
            obj["params"] = wire_params
        data = encode_message(obj)
        self._transition(trigger, local=True)
        self._requests.next_id()
        if asks_progress:
            self._requests.ask_progress(origin)
        modern = version is not None
        if deadline is None and timeout is not None and now is not None:
            deadline = now + timeout
        self._requests.add(
            request_id,
            OutgoingRequest(
                method,
                deadline,
                token,
                origin,
                params if modern else None,
                rounds,
                modern,
                version,
                timeout,
            ),
        )
        self._outbox.append(obj, related_request, data)
        return request_id

    def send_notification(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        stateless: bool = False,
        related_request: RequestId | None = None,
    ) -> None:
        """Queue a notification (capability-checked against our own advertisement).

        ``stateless`` marks a notification that belongs to a 2026-07-28
        request or subscription rather than to a handshake session.
        """
        if self.state is STATE_CLOSED:
            raise LocalProtocolError("the session is closed")
        if params is not None and not isinstance(params, dict):
            raise LocalProtocolError("params must be a dict")
        revision = REVISIONS[LATEST_STATELESS_REVISION] if stateless else self.revision
        self._gates.check_outgoing_notification(method, params or {}, revision, self._capabilities)
        obj: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            obj["params"] = params
        data = encode_message(obj)  # not JSON: refused before anything changes
        if not stateless:
            self._transition(trigger_for(method, is_request=False, sending=True), local=True)
        self._outbox.append(obj, related_request, data)

    def respond(self, request_id: RequestId, result: dict[str, Any]) -> None:
        """Answer a :class:`RequestReceived` with a result.

        Answering a request the peer has cancelled is silently dropped, as
        the spec requires; answering an unknown id raises.
        """
        if not isinstance(result, dict):
            raise LocalProtocolError("a result must be a dict")
        if self.state is STATE_CLOSED:
            return  # nobody left to answer
        requests = self._requests
        incoming = requests.incoming.get(request_id)
        if incoming is None:
            requests.answer(request_id)  # raises unless the peer cancelled it: dropped
            return
        # Closed only once its answer is queued: a result refused here (LocalProtocolError)
        # leaves the request open, to be answered properly (-32603, say).
        if incoming.meta is None:  # a handshake session's: the result as it is
            message = {"jsonrpc": "2.0", "id": request_id, "result": result}
        else:
            message = self._result_message(request_id, incoming, result)
        self._outbox.answer(request_id, message)
        del requests.incoming[request_id]
        if requests.last_progress is not None:
            requests.last_progress.pop(request_id, None)
        if incoming.method in self._bookkept_methods and "result" in message:
            self._after_response(incoming, result)

    def respond_error(
        self, request_id: RequestId, code: int | MCPError, message: str = "", data: Any = None
    ) -> None:
        """Answer a :class:`RequestReceived` with an error."""
        error = code if isinstance(code, MCPError) else MCPError(code, message, data)
        if self.state is STATE_CLOSED or self._requests.answer(request_id) is None:
            return
        try:
            self._outbox.answer(request_id, self._error_obj(request_id, error))
        except LocalProtocolError as exc:
            # The error's data is not JSON: the request is still answered, without it.
            plain = MCPError(ErrorCode.INTERNAL_ERROR, f"{error.message} ({exc})")
            self._outbox.answer(request_id, self._error_obj(request_id, plain))

    def _after_response(self, incoming: RequestReceived, result: dict[str, Any]) -> None:
        """Bookkeeping a successful answer to one of ``_bookkept_methods`` implies."""

    def cancel(self, request_id: RequestId, reason: str | None = None) -> None:
        """Cancel one of our requests: tell the peer, and drop any late answer."""
        if self._requests.is_paused(request_id):
            self._requests.end(request_id)  # nothing on the wire between MRTR rounds
            return
        wire_id = self._requests.wire_id(request_id)
        if wire_id is None:
            raise LocalProtocolError(f"no pending request with id {request_id!r}")
        pending = self._requests.on_wire(wire_id)
        assert pending is not None
        if pending.method == "initialize":
            raise LocalProtocolError("initialize must not be cancelled")
        params: dict[str, Any] = {"requestId": wire_id}
        if reason is not None:
            params["reason"] = reason
        self.send_notification("notifications/cancelled", params)
        self._requests.end(request_id, drop_late_answer=True)

    def forget(self, request_id: RequestId) -> None:
        """Stop waiting for one of our requests without telling the peer (for one
        that may not be cancelled on the wire now, such as ``initialize``): a late
        answer is dropped.  Unknown ids are ignored."""
        self._requests.end(request_id, drop_late_answer=True)

    def send_progress(
        self,
        request_id: RequestId,
        progress: float,
        total: float | None = None,
        message: str | None = None,
    ) -> bool:
        """Report progress on a peer's request; False when it asked for none.

        Progress must increase, as the spec requires.
        """
        params = self._requests.progress_params(request_id, progress, total, message, self.revision)
        if params is None:
            return False
        incoming = self._requests.incoming[request_id]
        self.send_notification(
            "notifications/progress",
            params,
            stateless=incoming.meta is not None,
            related_request=request_id,
        )
        self._requests.progress_sent(request_id, progress)
        return True

    def send_ping(self, *, now: float | None = None, timeout: float | None = None) -> RequestId:
        return self.send_request("ping", None, now=now, timeout=timeout)

    # ------------------------------------------------------------ timers, end

    def next_deadline(self) -> float | None:
        """The earliest request deadline, or None if nothing is armed."""
        return self._requests.next_deadline()

    def handle_timer(self, now: float) -> list[RequestId]:
        """Expire requests whose deadline has passed; return their ids.

        Each becomes a :class:`RequestFailed` with :class:`RequestTimeout`
        and is cancelled on the wire (initialize, which may not be
        cancelled, just fails).
        """
        expired = self._requests.expired(now)
        for pending in expired:
            request_id = pending.origin
            if self._on_timeout(pending, now):
                continue
            if self._requests.is_paused(request_id):
                self.cancel(request_id)
            elif (
                pending.method in ("initialize", "server/discover")
                and self.state is SessionState.INITIALIZING
            ):
                # The start of a session may not be cancelled: it just fails.
                self._requests.end(request_id)
                self._transition(Trigger.INITIALIZE_TIMEOUT, local=True)
            elif self._allowed(Trigger.SEND_UTILITY):
                self.cancel(request_id, "request timed out")
            else:
                # notifications/cancelled may not be sent in this state (a ping
                # before the handshake): just forget the request.
                self._requests.end(request_id, drop_late_answer=True)
            self._requests.fail(pending, RequestTimeout(message=f"{pending.method} timed out"))
        return [p.origin for p in expired]

    def close(self, reason: str | None = None) -> None:
        """End the session: every pending request fails with ConnectionClosedError
        (saying ``reason``, when given)."""
        if self.state is STATE_CLOSED:
            return
        self._transition(Trigger.CLOSE, local=True)
        self.close_reason = reason
        self._requests.close(reason)
        self._events.append(ConnectionClosed())

    # ----------------------------------------------------------------- output

    def messages_to_send(self) -> list[Any]:
        """Take the queued messages as JSON values (dicts, or lists for batches)."""
        return [item.message for item in self._outbox.take()]

    def routed_messages_to_send(self) -> list[tuple[Any, RequestId | None]]:
        """Take the queued messages with their routes: the id of the peer request
        each belongs to (its response, its progress, what its handler asked),
        or None for session-level traffic."""
        return [(item.message, item.route) for item in self._outbox.take()]

    def outgoing_to_send(self) -> list[Outgoing]:
        """Take the queued messages as :class:`Outgoing`: each with its JSON bytes
        (encoded once, when it was queued; what a transport frames) and its route
        (as :meth:`routed_messages_to_send` gives it)."""
        return self._outbox.take()

    def data_to_send(self) -> bytes:
        """Take the queued messages as NDJSON bytes."""
        return self._outbox.take_data()

    def data_source(self) -> Callable[[], bytes]:
        """What :meth:`data_to_send` calls, the same for the session's life (or
        ``data_to_send`` itself, where a subclass or the instance refines it): a byte
        stream that takes output after every message binds it once, a call fewer each
        time."""
        # Asked of the bound method, not vars(self): that would give the session a
        # dict of its own, and every attribute read after it costs more.
        if getattr(self.data_to_send, "__func__", None) is not Session.data_to_send:
            return self.data_to_send
        return self._outbox.take_data

    # ---------------------------------------------------------------- helpers

    def _refusal(self, request_id: RequestId, error: MCPError) -> dict[str, Any]:
        """Report a request of the peer's we will not serve; the error that answers it."""
        self._events.append(
            ProtocolViolation(
                RemoteProtocolError(
                    error.message, code=error.code, request_id=request_id, data=error.data
                ),
                refused=True,
            )
        )
        return self._error_obj(request_id, error)

    def _error_obj(
        self, request_id: RequestId | None, error: MCPError | RemoteProtocolError
    ) -> dict[str, Any]:
        if isinstance(error, RemoteProtocolError):
            error = MCPError(error.code, error.message, error.data)
        null_id = self.revision is None or not self.revision.error_id_optional
        return message_to_obj(JSONRPCError(request_id, error), null_error_id=null_id)
