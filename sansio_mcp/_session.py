"""The MCP session machines: :class:`ClientSession` and :class:`ServerSession`.

A session is pure bookkeeping.  Feed it what arrived (``receive_data`` for a
byte stream, ``receive_message`` for an already-framed message), read
:meth:`~Session.next_event` until it returns :data:`NEED_DATA`, act through
its methods (``send_request``, ``respond``, ``cancel`` …) and ship what
``data_to_send`` / ``messages_to_send`` return.  Time is passed in as
``now``; nothing here reads a clock or touches I/O.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from . import _json
from ._errors import (
    ConnectionClosedError,
    ErrorCode,
    InputRoundsExceeded,
    LocalProtocolError,
    MCPError,
    RemoteProtocolError,
    RequestCancelled,
    RequestTimeout,
    UnsupportedProtocolVersion,
)
from ._events import (
    CancelRequested,
    ConnectionClosed,
    Event,
    InputRequired,
    NotificationReceived,
    ProgressReceived,
    ProtocolViolation,
    RequestFailed,
    RequestMeta,
    RequestReceived,
    ResponseReceived,
    SessionInitialized,
    SubscriptionAcknowledged,
)
from ._jsonrpc import (
    JSONRPCError,
    JSONRPCMessage,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    RequestId,
    is_request_id,
    message_to_obj,
    parse_message,
)
from ._modern import (
    CacheHints,
    build_request_meta,
    check_input_required,
    honoured_filter,
    is_modern_request,
    missing_capability_error,
    missing_input_capabilities,
    modern_versions,
    parse_request_meta,
    shape_result,
)
from ._ndjson import NEED_DATA, NdjsonFramer
from ._params import LOG_LEVELS, check_params
from ._state import Role, SessionState, Trigger, next_state, trigger_for
from ._versions import (
    ALL_REVISIONS,
    CLIENT_NOTIFICATION_GATES,
    CLIENT_REQUEST_GATES,
    HANDSHAKE_REVISIONS,
    LATEST_MODERN_REVISION,
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
    META_SUBSCRIPTION_ID,
    REVISIONS,
    SERVER_NOTIFICATION_GATES,
    SERVER_REQUEST_GATES,
    Era,
    Revision,
)

__all__ = [
    "Session",
    "ClientSession",
    "ServerSession",
    "DEFAULT_CLIENT_INFO",
    "DEFAULT_SERVER_INFO",
]

DEFAULT_CLIENT_INFO: dict[str, Any] = {"name": "sansio-mcp", "version": "0.1.0"}
DEFAULT_SERVER_INFO: dict[str, Any] = {"name": "sansio-mcp-server", "version": "0.1.0"}

# How many cancelled request ids we remember to drop their late responses.
_CANCELLED_MEMORY = 1024


@attrs.define
class _Outgoing:
    method: str
    deadline: float | None
    progress_token: str | int | None
    #: The id events report: the first wire id of an MRTR or version-retry chain.
    origin: RequestId = 0
    #: Modern requests keep their params for retries.
    params: dict[str, Any] | None = None
    rounds: int = 1
    modern: bool = False
    #: The stateless revision a modern request went out at (for -32022 retries).
    version: str | None = None
    #: The timeout it was sent with, so a redo can be given the same time.
    timeout: float | None = None


@attrs.define
class _Incoming:
    method: str
    params: dict[str, Any]
    progress_token: str | int | None
    last_progress: float | None = None
    meta: RequestMeta | None = None


@attrs.define
class _Batch:
    pending: set[RequestId]
    responses: list[dict[str, Any]]


def _has_capability(capabilities: dict[str, Any] | None, path: Sequence[str]) -> bool:
    """Whether ``capabilities`` declare ``path`` (a sub-capability set to false does not)."""
    if not isinstance(capabilities, dict):
        return False
    node: Any = capabilities.get(path[0])
    for key in path[1:]:
        if not isinstance(node, dict):
            return False
        node = node.get(key)
        if node is False:
            return False
    return node is not None and node is not False


class Session:
    """Shared machinery of both roles. Use :class:`ClientSession` or :class:`ServerSession`."""

    role: Role
    #: Capability each request method of the peer's needs of ours, and what ours
    #: need of the peer's (requests) or of ours (notifications).
    _incoming_gates: Mapping[str, tuple[str, ...]]
    _outgoing_request_gates: Mapping[str, tuple[str, ...]]
    _outgoing_notification_gates: Mapping[str, tuple[str, ...]]

    def __init__(
        self,
        *,
        capabilities: dict[str, Any] | None = None,
        info: dict[str, Any] | None = None,
        supported_versions: Iterable[str] = HANDSHAKE_REVISIONS,
        max_message_size: int = _json.DEFAULT_MAX_MESSAGE_SIZE,
        max_depth: int = _json.DEFAULT_MAX_DEPTH,
    ) -> None:
        versions = tuple(supported_versions)
        unknown = [v for v in versions if v not in REVISIONS]
        if unknown or not versions:
            raise LocalProtocolError(
                f"unsupported protocol versions {unknown}; known: {list(REVISIONS)}"
            )
        #: Versions we accept, oldest first.
        self.supported_versions: tuple[str, ...] = tuple(sorted(versions))
        self.capabilities: dict[str, Any] = dict(capabilities or {})
        self.info: dict[str, Any] = dict(info or {})
        self.max_message_size = max_message_size
        self.max_depth = max_depth
        self.state = SessionState.IDLE
        #: The negotiated revision, once known.
        self.revision: Revision | None = None
        self.peer_capabilities: dict[str, Any] | None = None
        self.peer_info: dict[str, Any] | None = None
        self._framer = NdjsonFramer(max_message_size)
        self._events: deque[Event] = deque()
        # (message, route): route is the peer request a message belongs to, if any
        self._outbox: list[tuple[Any, RequestId | None]] = []
        self._next_id = 0
        self._outgoing: dict[RequestId, _Outgoing] = {}
        self._progress_tokens: dict[str | int, RequestId] = {}
        self._cancelled_outgoing: OrderedDict[RequestId, None] = OrderedDict()
        self._incoming: dict[RequestId, _Incoming] = {}
        self._cancelled_incoming: OrderedDict[RequestId, None] = OrderedDict()
        self._batch_of: dict[RequestId, _Batch] = {}
        # origin id -> wire id of the request currently carrying it
        self._wire_of: dict[RequestId, RequestId] = {}
        # origin id -> chain waiting for the application's input (MRTR)
        self._paused: dict[RequestId, _Outgoing] = {}

    # ------------------------------------------------------------------ state

    @property
    def protocol_version(self) -> str | None:
        return self.revision.name if self.revision else None

    @property
    def pending_requests(self) -> frozenset[RequestId]:
        """Ids of our requests that have not ended yet."""
        return frozenset(self._wire_of) | frozenset(self._paused)

    @property
    def open_requests(self) -> frozenset[RequestId]:
        """Ids of the peer's requests we have not answered yet."""
        return frozenset(self._incoming)

    def _transition(self, trigger: Trigger, *, local: bool) -> None:
        new = next_state(self.role, self.state, trigger)
        if new is None:
            message = f"{trigger.value} is not allowed in state {self.state.name}"
            if local:
                raise LocalProtocolError(message)
            raise RemoteProtocolError(message, code=ErrorCode.INVALID_REQUEST)
        self.state = new

    def _allowed(self, trigger: Trigger) -> bool:
        return next_state(self.role, self.state, trigger) is not None

    # ---------------------------------------------------------------- receive

    def receive_data(self, data: bytes | bytearray) -> None:
        """Feed bytes of an NDJSON stream (stdio); ``b""`` means end of input."""
        for line in self._framer.lines(data):
            if isinstance(line, RemoteProtocolError):
                self._violation(line)
                continue
            try:
                obj = _json.loads(line, max_depth=self.max_depth)
            except RemoteProtocolError as exc:
                exc.answer = True
                self._violation(exc)
                continue
            self.receive_message(obj)
        if self._framer.eof:
            self.close()

    def receive_message(self, obj: Any) -> None:
        """Feed one decoded JSON-RPC message (or a batch, as a list)."""
        if self.state is SessionState.CLOSED:
            return
        if isinstance(obj, list):
            self._receive_batch(obj)
            return
        try:
            message = parse_message(obj)
        except RemoteProtocolError as exc:
            self._violation(exc)
            self._fail_malformed_response(exc)
            return
        self._dispatch(message)

    def receive_text(self, text: str | bytes) -> None:
        """Feed one whole JSON text (an HTTP body, a WebSocket message)."""
        size = len(text) if isinstance(text, bytes) else len(text.encode("utf-8", "surrogatepass"))
        if size > self.max_message_size:
            error = RemoteProtocolError(
                f"message exceeds the {self.max_message_size}-byte limit",
                code=ErrorCode.INVALID_REQUEST,
            )
            error.answer = True
            self._violation(error)
            return
        try:
            obj = _json.loads(text, max_depth=self.max_depth)
        except RemoteProtocolError as exc:
            exc.answer = True
            self._violation(exc)
            return
        self.receive_message(obj)

    def next_event(self) -> Event | type[NEED_DATA]:
        """The next event, or :data:`NEED_DATA` when there is none."""
        if self._events:
            return self._events.popleft()
        return NEED_DATA

    def _receive_batch(self, items: list[Any]) -> None:
        if not items:
            self._violation(self._answerable("an empty batch is not a valid request"))
            return
        if self.revision is None or not self.revision.batching:
            where = f"revision {self.revision}" if self.revision else "before initialization"
            self._violation(self._answerable(f"JSON-RPC batches are not allowed {where}"))
            return
        batch = _Batch(pending=set(), responses=[])
        messages: list[JSONRPCMessage] = []
        for item in items:
            try:
                message = parse_message(item)
            except RemoteProtocolError as exc:
                self._events.append(ProtocolViolation(exc))
                if exc.answer:
                    batch.responses.append(self._error_obj(exc.request_id, exc))
                self._fail_malformed_response(exc)
                continue
            refusal: MCPError | None = None
            if isinstance(message, JSONRPCRequest) and message.method == "initialize":
                refusal = MCPError(
                    ErrorCode.INVALID_REQUEST, "initialize must not be part of a batch"
                )
            elif isinstance(message, JSONRPCRequest) and (
                message.id in batch.pending or message.id in self._incoming
            ):
                # Refused here: routed through _queue_response, the error would
                # answer (and unhook) the batch of the request that owns the id.
                refusal = MCPError(
                    ErrorCode.INVALID_REQUEST,
                    f"request id {message.id!r} is already in use by an unanswered request",
                )
            if refusal is not None:
                assert isinstance(message, JSONRPCRequest)
                self._events.append(
                    ProtocolViolation(
                        RemoteProtocolError(
                            refusal.message, code=refusal.code, request_id=message.id
                        )
                    )
                )
                batch.responses.append(self._error_obj(message.id, refusal))
                continue
            if isinstance(message, JSONRPCRequest):
                batch.pending.add(message.id)
                self._batch_of[message.id] = batch
            messages.append(message)
        for message in messages:
            self._dispatch(message)
        self._maybe_flush_batch(batch)

    @staticmethod
    def _answerable(message: str, code: int = ErrorCode.INVALID_REQUEST) -> RemoteProtocolError:
        error = RemoteProtocolError(message, code=code)
        error.answer = True
        return error

    def _violation(self, error: RemoteProtocolError) -> None:
        if self.state is SessionState.CLOSED:
            return  # input after close is ignored, as receive_message does
        self._events.append(ProtocolViolation(error))
        if error.answer:
            self._queue_response(error.request_id, self._error_obj(error.request_id, error))

    def _fail_malformed_response(self, error: RemoteProtocolError) -> None:
        # A malformed answer to a pending request must end that request, not hang it.
        if error.answer or error.request_id is None:
            return
        pending = self._outgoing.pop(error.request_id, None)
        if pending is not None:
            self._wire_of.pop(pending.origin, None)
            self._forget_progress(pending)
            self._events.append(
                RequestFailed(
                    pending.origin,
                    pending.method,
                    MCPError(ErrorCode.INVALID_REQUEST, f"malformed response: {error.message}"),
                )
            )

    def _dispatch(self, message: JSONRPCMessage) -> None:
        if isinstance(message, JSONRPCRequest):
            self._on_request(message)
        elif isinstance(message, JSONRPCNotification):
            self._on_notification(message)
        elif isinstance(message, JSONRPCResponse):
            self._on_response(message.id, message.result, None)
        else:
            self._on_response(message.id, None, message.error)

    def _on_request(self, request: JSONRPCRequest) -> None:
        method, params = request.method, request.params or {}
        if request.id in self._incoming or request.id in self._cancelled_incoming:
            # An id must not be reused in a session; one the peer cancelled may still
            # get its handler's late answer, which must not answer the newcomer.
            duplicate = MCPError(
                ErrorCode.INVALID_REQUEST,
                f"request id {request.id!r} is already in use by an unanswered request"
                if request.id in self._incoming
                else f"request id {request.id!r} was used by a request cancelled before",
            )
            self._events.append(
                ProtocolViolation(
                    RemoteProtocolError(
                        duplicate.message, code=duplicate.code, request_id=request.id
                    )
                )
            )
            # Straight to the outbox: _queue_response would route this error into
            # the batch of the original request that owns the id.
            self._outbox.append((self._error_obj(request.id, duplicate), request.id))
            return
        try:
            self._check_incoming_request(method, params)
            trigger = trigger_for(method, is_request=True, sending=False)
            after = next_state(self.role, self.state, trigger)
            if after is None:
                raise MCPError(
                    ErrorCode.INVALID_REQUEST,
                    f"{method!r} is not allowed while the session is {self.state.name.lower()}",
                )
            problem = check_params(method, params)
            if problem:
                raise MCPError(ErrorCode.INVALID_PARAMS, problem)
        except MCPError as error:
            violation = RemoteProtocolError(error.message, code=error.code, request_id=request.id)
            self._events.append(ProtocolViolation(violation))
            self._queue_response(request.id, self._error_obj(request.id, error))
            return
        self.state = after
        if method == "ping":
            self._queue_response(request.id, {"jsonrpc": "2.0", "id": request.id, "result": {}})
            return
        if method == "initialize":
            self._on_initialize(request.id, params)
            return
        if self._handle_locally(request.id, method, params):
            return
        token = None
        meta = params.get("_meta")
        if isinstance(meta, dict):
            raw_token = meta.get("progressToken")
            if isinstance(raw_token, (str, int)) and not isinstance(raw_token, bool):
                token = raw_token
        self._incoming[request.id] = _Incoming(method, params, token)
        self._events.append(RequestReceived(request.id, method, params, token))

    def _check_incoming_request(self, method: str, params: dict[str, Any]) -> None:
        """Raise MCPError (-32601) when we do not serve ``method``."""
        if method in ("ping", "initialize"):
            if method == "initialize" and self.role is Role.CLIENT:
                raise MCPError(ErrorCode.METHOD_NOT_FOUND, "clients do not serve initialize")
            return
        revision = self.revision
        known = self._peer_request_methods(revision)
        if method not in known:
            raise MCPError(ErrorCode.METHOD_NOT_FOUND, f"method not found: {method!r}")
        gate = self._incoming_gates.get(method)
        if gate and (method != "completion/complete" or (revision and revision.completion_gated)):
            if not _has_capability(self.capabilities, gate):
                raise MCPError(
                    ErrorCode.METHOD_NOT_FOUND,
                    f"method not found: {method!r} (capability {'.'.join(gate)} not advertised)",
                )
        if method == "elicitation/create" and revision and revision.name < "2025-11-25":
            if params.get("mode", "form") != "form":
                raise MCPError(
                    ErrorCode.INVALID_PARAMS,
                    f"elicitation mode {params.get('mode')!r} does not exist in {revision.name}",
                )
        if method == "elicitation/create" and revision and revision.name >= "2025-11-25":
            mode = params.get("mode", "form")
            elicitation = self.capabilities.get("elicitation") or {}
            declared = {k for k in ("form", "url") if k in elicitation} or {"form"}
            if mode in ("form", "url") and mode not in declared:
                raise MCPError(
                    ErrorCode.INVALID_PARAMS, f"elicitation mode {mode!r} was not declared"
                )

    def _on_notification(self, notification: JSONRPCNotification) -> None:
        method, params = notification.method, notification.params or {}
        trigger = trigger_for(method, is_request=False, sending=False)
        if not self._allowed(trigger):
            self._events.append(
                ProtocolViolation(
                    RemoteProtocolError(
                        f"notification {method!r} is not allowed while the session is "
                        f"{self.state.name.lower()}"
                    )
                )
            )
            return
        revision = REVISIONS.get(self.protocol_version or "")
        if (
            revision is not None
            and method in self._own_notification_methods(revision)
            and method not in self._peer_notification_methods(revision)
        ):
            # One only our side sends (a server's notifications/message sent by a
            # client, say): unknown methods pass, as JSON-RPC allows them.
            self._events.append(
                ProtocolViolation(
                    RemoteProtocolError(f"notification {method!r} is not the peer's to send")
                )
            )
            return
        problem = check_params(method, params)
        if problem:
            self._events.append(
                ProtocolViolation(RemoteProtocolError(problem, code=ErrorCode.INVALID_PARAMS))
            )
            return
        self._transition(trigger, local=False)
        if method == "notifications/cancelled":
            self._on_cancelled(params)
        elif method == "notifications/progress":
            self._on_progress(params)
        elif method == "notifications/initialized":
            self._on_initialized()
        else:
            self._events.append(NotificationReceived(method, params))

    def _on_cancelled(self, params: dict[str, Any]) -> None:
        request_id = params.get("requestId")
        if request_id is None or request_id not in self._incoming:
            return  # unknown or finished: the spec says ignore it
        if self._incoming[request_id].method == "initialize":
            return
        del self._incoming[request_id]
        self._remember(self._cancelled_incoming, request_id)
        batch = self._batch_of.pop(request_id, None)
        if batch is not None:
            batch.pending.discard(request_id)
            self._maybe_flush_batch(batch)
        reason = params.get("reason")
        self._events.append(
            CancelRequested(request_id, reason if isinstance(reason, str) else None)
        )

    def _on_progress(self, params: dict[str, Any]) -> None:
        token = params["progressToken"]
        request_id = self._progress_tokens.get(token)
        if request_id is None:
            return  # late progress for a finished request
        total = params.get("total")
        message = params.get("message")
        self._events.append(
            ProgressReceived(
                request_id,
                token,
                params["progress"],
                total if isinstance(total, (int, float)) else None,
                message if isinstance(message, str) else None,
            )
        )

    def _on_response(
        self, request_id: RequestId | None, result: dict[str, Any] | None, error: MCPError | None
    ) -> None:
        if request_id is None:
            assert error is not None
            violation = RemoteProtocolError(
                f"the peer reported an error about a message it could not identify: "
                f"{error.message} (code {error.code})",
                code=error.code,
                data=error.data,
            )
            self._events.append(ProtocolViolation(violation))
            return
        pending = self._outgoing.pop(request_id, None)
        if pending is None:
            if request_id in self._cancelled_outgoing:
                del self._cancelled_outgoing[request_id]
                return  # a late answer to a request we cancelled: dropped, as the spec says
            self._events.append(
                ProtocolViolation(
                    RemoteProtocolError(
                        f"response to unknown request id {request_id!r}", request_id=request_id
                    )
                )
            )
            return
        self._wire_of.pop(pending.origin, None)
        self._complete(pending, result, error)

    def _complete(
        self, pending: _Outgoing, result: dict[str, Any] | None, error: MCPError | None
    ) -> None:
        """Report the end of one of our requests (clients refine this)."""
        self._forget_progress(pending)
        if error is not None:
            self._events.append(RequestFailed(pending.origin, pending.method, error))
        else:
            assert result is not None
            self._events.append(ResponseReceived(pending.origin, pending.method, result))

    # Role hooks ---------------------------------------------------------------

    def _peer_request_methods(self, revision: Revision | None) -> frozenset[str]:
        raise NotImplementedError

    def _own_request_methods(self, revision: Revision) -> frozenset[str]:
        raise NotImplementedError

    def _own_notification_methods(self, revision: Revision) -> frozenset[str]:
        raise NotImplementedError

    def _peer_notification_methods(self, revision: Revision) -> frozenset[str]:
        raise NotImplementedError

    def _on_initialize(self, request_id: RequestId, params: dict[str, Any]) -> None:
        raise NotImplementedError  # pragma: no cover - clients reject it earlier

    def _handle_locally(self, request_id: RequestId, method: str, params: dict[str, Any]) -> bool:
        """Answer a request the core serves itself; True if it did."""
        return False

    def _on_initialized(self) -> None:
        raise NotImplementedError  # pragma: no cover - servers only

    def _decorate_params(
        self, method: str, params: dict[str, Any] | None
    ) -> tuple[dict[str, Any] | None, str | None]:
        """Params as sent, and the stateless revision a modern request goes out
        at (None: a handshake-session request; clients refine this)."""
        return params, None

    def _on_timeout(self, pending: _Outgoing, now: float) -> bool:
        """Handle an expired request specially; True if handled (clients refine this)."""
        return False

    def _result_message(
        self, request_id: RequestId, incoming: _Incoming, result: dict[str, Any]
    ) -> dict[str, Any]:
        """The response message for a result (servers refine this)."""
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
        self._check_outgoing_request(method, params or {}, experimental=experimental)
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
        self._transition(trigger, local=True)
        request_id = self._next_id
        self._next_id += 1
        origin = request_id if origin is None else origin
        if progress and token is None:
            token = origin
            self._progress_tokens[token] = origin
        wire_params = dict(params) if params is not None else None
        if token is not None:
            wire_params = wire_params or {}
            meta = dict(wire_params.get("_meta") or {})
            meta["progressToken"] = token
            wire_params["_meta"] = meta
        if extra:
            wire_params = {**(wire_params or {}), **extra}
        wire_params, version = self._decorate_params(method, wire_params)
        modern = version is not None
        if deadline is None and timeout is not None and now is not None:
            deadline = now + timeout
        self._outgoing[request_id] = _Outgoing(
            method,
            deadline,
            token,
            origin,
            params if modern else None,
            rounds,
            modern,
            version,
            timeout,
        )
        self._wire_of[origin] = request_id
        obj: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if wire_params is not None:
            obj["params"] = wire_params
        self._outbox.append((obj, related_request))
        return request_id

    def _check_outgoing_request(
        self, method: str, params: dict[str, Any], *, experimental: bool
    ) -> None:
        if self.state is SessionState.CLOSED:
            raise LocalProtocolError("the session is closed")
        if method == "ping":
            return
        revision = self.revision
        if revision is None:
            raise LocalProtocolError(
                f"cannot send {method!r} before the session is initialized (only ping is allowed)"
            )
        if method not in self._own_request_methods(revision):
            if experimental:
                return
            raise LocalProtocolError(
                f"{method!r} is not a {self.role.value} request in revision {revision.name}"
            )
        gate = self._outgoing_request_gates.get(method)
        if gate and (method != "completion/complete" or revision.completion_gated):
            if not _has_capability(self.peer_capabilities, gate):
                raise LocalProtocolError(
                    f"cannot send {method!r}: the peer did not advertise capability "
                    f"{'.'.join(gate)}"
                )
        if method == "elicitation/create" and revision.name >= "2025-11-25":
            mode = params.get("mode", "form")
            elicitation = (self.peer_capabilities or {}).get("elicitation") or {}
            declared = {k for k in ("form", "url") if k in elicitation} or {"form"}
            if mode not in declared:
                raise LocalProtocolError(
                    f"cannot send elicitation/create in {mode!r} mode: "
                    "the client did not declare it"
                )
        problem = check_params(method, params)
        if problem:
            raise LocalProtocolError(problem)

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
        if self.state is SessionState.CLOSED:
            raise LocalProtocolError("the session is closed")
        if params is not None and not isinstance(params, dict):
            raise LocalProtocolError("params must be a dict")
        revision = REVISIONS[LATEST_MODERN_REVISION] if stateless else self.revision
        if revision is not None and method not in self._own_notification_methods(revision):
            raise LocalProtocolError(
                f"{method!r} is not a {self.role.value} notification in revision {revision.name}"
            )
        gate = self._outgoing_notification_gates.get(method)
        if gate and not _has_capability(self.capabilities, gate):
            raise LocalProtocolError(
                f"cannot send {method!r}: we did not advertise capability {'.'.join(gate)}"
            )
        problem = check_params(method, params or {})
        if problem:
            raise LocalProtocolError(problem)
        if not stateless:
            self._transition(trigger_for(method, is_request=False, sending=True), local=True)
        obj: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            obj["params"] = params
        self._outbox.append((obj, related_request))

    def respond(self, request_id: RequestId, result: dict[str, Any]) -> None:
        """Answer a :class:`RequestReceived` with a result.

        Answering a request the peer has cancelled is silently dropped, as
        the spec requires; answering an unknown id raises.
        """
        if not isinstance(result, dict):
            raise LocalProtocolError("a result must be a dict")
        if self.state is SessionState.CLOSED:
            return  # nobody left to answer
        incoming = self._take_incoming(request_id)
        if incoming is None:
            return
        try:
            message = self._result_message(request_id, incoming, result)
        except LocalProtocolError:
            self._incoming[request_id] = incoming  # still open: it can be answered properly
            raise
        if "result" in message:
            self._after_response(incoming, result)
        self._queue_response(request_id, message)

    def respond_error(
        self, request_id: RequestId, code: int | MCPError, message: str = "", data: Any = None
    ) -> None:
        """Answer a :class:`RequestReceived` with an error."""
        error = code if isinstance(code, MCPError) else MCPError(code, message, data)
        if self.state is SessionState.CLOSED or self._take_incoming(request_id) is None:
            return
        self._queue_response(request_id, self._error_obj(request_id, error))

    def _take_incoming(self, request_id: RequestId) -> _Incoming | None:
        incoming = self._incoming.pop(request_id, None)
        if incoming is None:
            if request_id in self._cancelled_incoming:
                del self._cancelled_incoming[request_id]
                return None
            raise LocalProtocolError(f"no open request with id {request_id!r}")
        return incoming

    def _after_response(self, incoming: _Incoming, result: dict[str, Any]) -> None:
        """Bookkeeping a successful answer implies (role-specific)."""

    def cancel(self, request_id: RequestId, reason: str | None = None) -> None:
        """Cancel one of our requests: tell the peer, and drop any late answer."""
        paused = self._paused.pop(request_id, None)
        if paused is not None:
            self._forget_progress(paused)  # nothing on the wire between MRTR rounds
            return
        wire_id = self._wire_of.get(request_id)
        if wire_id is None:
            raise LocalProtocolError(f"no pending request with id {request_id!r}")
        pending = self._outgoing[wire_id]
        if pending.method == "initialize":
            raise LocalProtocolError("initialize must not be cancelled")
        params: dict[str, Any] = {"requestId": wire_id}
        if reason is not None:
            params["reason"] = reason
        self.send_notification("notifications/cancelled", params)
        del self._outgoing[wire_id]
        del self._wire_of[request_id]
        self._forget_progress(pending)
        self._remember(self._cancelled_outgoing, wire_id)

    def forget(self, request_id: RequestId) -> None:
        """Stop waiting for one of our requests without telling the peer (for one
        that may not be cancelled on the wire now, such as ``initialize``): a late
        answer is dropped.  Unknown ids are ignored."""
        paused = self._paused.pop(request_id, None)
        if paused is not None:
            self._forget_progress(paused)
            return
        wire_id = self._wire_of.pop(request_id, None)
        if wire_id is None:
            return
        pending = self._outgoing.pop(wire_id)
        self._forget_progress(pending)
        self._remember(self._cancelled_outgoing, wire_id)

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
        incoming = self._incoming.get(request_id)
        if incoming is None:
            raise LocalProtocolError(f"no open request with id {request_id!r}")
        if incoming.progress_token is None:
            return False
        if incoming.last_progress is not None and progress <= incoming.last_progress:
            raise LocalProtocolError(
                f"progress must increase (was {incoming.last_progress}, now {progress})"
            )
        params: dict[str, Any] = {"progressToken": incoming.progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        revision = REVISIONS[incoming.meta.protocol_version] if incoming.meta else self.revision
        if message is not None and revision is not None and revision.name >= "2025-03-26":
            params["message"] = message
        self.send_notification(
            "notifications/progress",
            params,
            stateless=incoming.meta is not None,
            related_request=request_id,
        )
        incoming.last_progress = progress
        return True

    def send_ping(self, *, now: float | None = None, timeout: float | None = None) -> RequestId:
        return self.send_request("ping", None, now=now, timeout=timeout)

    # ------------------------------------------------------------ timers, end

    def next_deadline(self) -> float | None:
        """The earliest request deadline, or None if nothing is armed."""
        deadlines = [
            p.deadline
            for p in (*self._outgoing.values(), *self._paused.values())
            if p.deadline is not None
        ]
        return min(deadlines) if deadlines else None

    def handle_timer(self, now: float) -> list[RequestId]:
        """Expire requests whose deadline has passed; return their ids.

        Each becomes a :class:`RequestFailed` with :class:`RequestTimeout`
        and is cancelled on the wire (initialize, which may not be
        cancelled, just fails).
        """
        expired = [
            p
            for p in (*self._outgoing.values(), *self._paused.values())
            if p.deadline is not None and p.deadline <= now
        ]
        for pending in expired:
            request_id = pending.origin
            wire_id = self._wire_of.get(request_id)
            if self._on_timeout(pending, now):
                continue
            if request_id in self._paused:
                self.cancel(request_id)
            elif (
                pending.method in ("initialize", "server/discover")
                and self.state is SessionState.INITIALIZING
            ):
                # The start of a session may not be cancelled: it just fails.
                assert wire_id is not None
                del self._outgoing[wire_id], self._wire_of[request_id]
                self._transition(Trigger.INITIALIZE_TIMEOUT, local=True)
                self._forget_progress(pending)
            elif self._allowed(Trigger.SEND_UTILITY):
                self.cancel(request_id, "request timed out")
            else:
                # notifications/cancelled may not be sent in this state (a ping
                # before the handshake): just forget the request.
                assert wire_id is not None
                del self._outgoing[wire_id], self._wire_of[request_id]
                self._forget_progress(pending)
                self._remember(self._cancelled_outgoing, wire_id)
            self._events.append(
                RequestFailed(
                    request_id,
                    pending.method,
                    RequestTimeout(message=f"{pending.method} timed out"),
                )
            )
        return [p.origin for p in expired]

    def close(self) -> None:
        """End the session: every pending request fails with ConnectionClosedError."""
        if self.state is SessionState.CLOSED:
            return
        self._transition(Trigger.CLOSE, local=True)
        for pending in (*self._outgoing.values(), *self._paused.values()):
            self._events.append(
                RequestFailed(
                    pending.origin,
                    pending.method,
                    ConnectionClosedError(message="the connection closed before a response"),
                )
            )
        self._outgoing.clear()
        self._wire_of.clear()
        self._paused.clear()
        self._progress_tokens.clear()
        self._incoming.clear()
        self._events.append(ConnectionClosed())

    # ----------------------------------------------------------------- output

    def messages_to_send(self) -> list[Any]:
        """Take the queued messages as JSON values (dicts, or lists for batches)."""
        out, self._outbox = self._outbox, []
        return [obj for obj, _ in out]

    def routed_messages_to_send(self) -> list[tuple[Any, RequestId | None]]:
        """Take the queued messages with their routes: the id of the peer request
        each belongs to (its response, its progress, what its handler asked),
        or None for session-level traffic."""
        out, self._outbox = self._outbox, []
        return out

    def data_to_send(self) -> bytes:
        """Take the queued messages as NDJSON bytes."""
        if not self._outbox:
            return b""
        out, self._outbox = self._outbox, []
        encode = _json.encode
        if len(out) == 1:
            return encode(out[0][0]) + b"\n"
        return b"".join([encode(obj) + b"\n" for obj, _ in out])

    # ---------------------------------------------------------------- helpers

    def _error_obj(
        self, request_id: RequestId | None, error: MCPError | RemoteProtocolError
    ) -> dict[str, Any]:
        if isinstance(error, RemoteProtocolError):
            error = MCPError(error.code, error.message, error.data)
        null_id = self.revision is None or not self.revision.error_id_optional
        return message_to_obj(JSONRPCError(request_id, error), null_error_id=null_id)

    def _queue_response(self, request_id: RequestId | None, obj: dict[str, Any]) -> None:
        batch = self._batch_of.pop(request_id, None) if request_id is not None else None
        if batch is None:
            self._outbox.append((obj, request_id))
            return
        batch.pending.discard(request_id)
        batch.responses.append(obj)
        self._maybe_flush_batch(batch)

    def _maybe_flush_batch(self, batch: _Batch) -> None:
        if not batch.pending and batch.responses:
            self._outbox.append((batch.responses, None))
            batch.responses = []

    def _forget_progress(self, pending: _Outgoing) -> None:
        if pending.progress_token is not None:
            self._progress_tokens.pop(pending.progress_token, None)

    @staticmethod
    def _remember(memory: OrderedDict[RequestId, None], request_id: RequestId) -> None:
        memory[request_id] = None
        while len(memory) > _CANCELLED_MEMORY:
            memory.popitem(last=False)


ClientMode = str  # "legacy" | "modern" | "auto"


class ClientSession(Session):
    """The client side of MCP.

    ``mode`` picks the era: ``"legacy"`` (the initialize handshake),
    ``"modern"`` (2026-07-28: ``server/discover`` then ``_meta`` on every
    request) or ``"auto"`` (probe with ``server/discover``, fall back to
    ``initialize`` when the server does not speak the modern revision).
    :meth:`start` begins whichever the mode calls for; :meth:`initialize`
    and :meth:`discover` are the explicit forms.
    """

    role = Role.CLIENT

    def __init__(
        self,
        *,
        capabilities: dict[str, Any] | None = None,
        client_info: dict[str, Any] | None = None,
        supported_versions: Iterable[str] = ALL_REVISIONS,
        protocol_version: str | None = None,
        mode: str = "legacy",
        max_input_rounds: int = 10,
        log_level: str | None = None,
        max_message_size: int = _json.DEFAULT_MAX_MESSAGE_SIZE,
        max_depth: int = _json.DEFAULT_MAX_DEPTH,
    ) -> None:
        super().__init__(
            capabilities=capabilities,
            info=client_info or DEFAULT_CLIENT_INFO,
            supported_versions=supported_versions,
            max_message_size=max_message_size,
            max_depth=max_depth,
        )
        if mode not in ("legacy", "modern", "auto"):
            raise LocalProtocolError(f"mode must be legacy, modern or auto, not {mode!r}")
        if protocol_version is not None and protocol_version not in self.supported_versions:
            raise LocalProtocolError(
                f"protocol version {protocol_version!r} is not among {self.supported_versions}"
            )
        if log_level is not None and log_level not in LOG_LEVELS:
            raise LocalProtocolError(f"unknown log level {log_level!r}")
        legacy = [v for v in self.supported_versions if REVISIONS[v].era is Era.LEGACY]
        modern = [v for v in self.supported_versions if REVISIONS[v].era is Era.MODERN]
        if protocol_version is not None:
            mode = "modern" if REVISIONS[protocol_version].era is Era.MODERN else "legacy"
        if mode != "modern" and not legacy:
            raise LocalProtocolError("no handshake revision is supported: use mode='modern'")
        if mode != "legacy" and not modern:
            raise LocalProtocolError("no 2026-07-28-or-later revision is supported")
        self.mode = mode
        #: The version we ask for in initialize (our latest handshake revision by default).
        self.requested_version = (
            protocol_version
            if protocol_version and REVISIONS[protocol_version].era is Era.LEGACY
            else (legacy[-1] if legacy else "")
        )
        #: The version we put in ``_meta`` on modern requests.
        self.modern_version = (
            protocol_version
            if protocol_version and REVISIONS[protocol_version].era is Era.MODERN
            else (modern[-1] if modern else "")
        )
        self.max_input_rounds = max_input_rounds
        #: Log level asked of a modern server per request (``logging/setLevel`` on legacy).
        self.log_level = log_level
        self.instructions: str | None = None
        #: The server's DiscoverResult, when the modern era was reached through discover.
        self.discovery: dict[str, Any] | None = None
        self._start_id: RequestId | None = None
        # Origins of requests already retried at the version the server refused.
        self._same_version_retries: OrderedDict[RequestId, None] = OrderedDict()

    @property
    def is_modern(self) -> bool:
        """Whether this client speaks the stateless revision."""
        return self.state is SessionState.STATELESS

    # Starting ------------------------------------------------------------------

    def start(self, *, now: float | None = None, timeout: float | None = None) -> RequestId:
        """Begin as ``mode`` says; the returned id ends with the handshake's outcome."""
        if self.mode == "legacy":
            return self.initialize(now=now, timeout=timeout)
        return self.discover(now=now, timeout=timeout)

    def initialize(self, *, now: float | None = None, timeout: float | None = None) -> RequestId:
        """Queue the initialize request."""
        request_id = self._send_request(
            "initialize", self._initialize_params(), now=now, timeout=timeout, progress=False
        )
        self._start_id = request_id
        return request_id

    def _initialize_params(self) -> dict[str, Any]:
        revision = REVISIONS[self.requested_version]
        return {
            "protocolVersion": self.requested_version,
            "capabilities": _trim_capabilities(
                self.capabilities, revision.client_capabilities, revision
            ),
            "clientInfo": _trim_info(self.info, revision),
        }

    def discover(self, *, now: float | None = None, timeout: float | None = None) -> RequestId:
        """Queue ``server/discover`` at our modern version (the stateless era's start)."""
        request_id = self._send_request(
            "server/discover",
            {"_meta": self._modern_meta(None)},
            now=now,
            timeout=timeout,
            progress=False,
            trigger=Trigger.SEND_DISCOVER,
        )
        self._start_id = request_id
        return request_id

    def _modern_meta(self, existing: Any) -> dict[str, Any]:
        revision = REVISIONS[self.modern_version]
        capabilities = _trim_capabilities(self.capabilities, revision.client_capabilities)
        if "roots" in capabilities:
            capabilities["roots"] = {}  # listChanged is gone in this revision
        return build_request_meta(
            existing,
            version=self.modern_version,
            capabilities=capabilities,
            client_info=_trim_info(self.info, revision),
            log_level=self.log_level,
        )

    def _decorate_params(
        self, method: str, params: dict[str, Any] | None
    ) -> tuple[dict[str, Any] | None, str | None]:
        if self.state is not SessionState.STATELESS and method != "server/discover":
            return params, None
        params = dict(params or {})
        params["_meta"] = self._modern_meta(params.get("_meta"))
        return params, self.modern_version

    def _fall_back_to_legacy(self, pending: _Outgoing, now: float | None) -> None:
        """The server does not speak the modern revision: redo the start as initialize."""
        self._transition(Trigger.LEGACY_FALLBACK, local=True)
        self.mode = "legacy"
        self._send_request(
            "initialize",
            self._initialize_params(),
            now=now,
            timeout=None,
            progress=False,
            trigger=Trigger.LEGACY_FALLBACK,
            origin=pending.origin,
            deadline=pending.deadline,
        )

    def _on_timeout(self, pending: _Outgoing, now: float) -> bool:
        if (
            pending.method == "server/discover"
            and pending.origin == self._start_id
            and self.state is SessionState.INITIALIZING
            and self.mode == "auto"
            and self.requested_version
        ):
            # No answer to the probe: a legacy server that ignores unknown requests.
            wire_id = self._wire_of.pop(pending.origin)
            del self._outgoing[wire_id]
            self._remember(self._cancelled_outgoing, wire_id)
            # The handshake gets the same time the probe had, not an open-ended wait.
            deadline = now + pending.timeout if pending.timeout is not None else None
            self._fall_back_to_legacy(attrs.evolve(pending, deadline=deadline), now)
            return True
        return False

    # Responses ---------------------------------------------------------------------

    def _complete(
        self, pending: _Outgoing, result: dict[str, Any] | None, error: MCPError | None
    ) -> None:
        if pending.origin == self._start_id and self.state is SessionState.INITIALIZING:
            if pending.method == "initialize":
                self._on_initialize_response(pending, result, error)
            else:
                self._on_discover_response(pending, result, error)
            return
        if pending.modern:
            if error is not None and error.code == ErrorCode.UNSUPPORTED_PROTOCOL_VERSION:
                if self._retry_with_mutual_version(pending, error):
                    return
            if result is not None:
                result_type = result.get("resultType", "complete")
                if result_type == "input_required":
                    self._on_input_required(pending, result)
                    return
                if result_type != "complete":
                    result, error = (
                        None,
                        MCPError(
                            ErrorCode.INVALID_REQUEST, f"unrecognised resultType {result_type!r}"
                        ),
                    )
        super()._complete(pending, result, error)

    def _on_initialize_response(
        self, pending: _Outgoing, result: dict[str, Any] | None, error: MCPError | None
    ) -> None:
        if error is None:
            assert result is not None
            error = self._accept_initialize_result(result)
        self._forget_progress(pending)
        if error is not None:
            self._transition(Trigger.RECV_INITIALIZE_ERROR, local=False)
            self._events.append(RequestFailed(pending.origin, "initialize", error))
            return
        assert result is not None
        self._transition(Trigger.RECV_INITIALIZE_RESULT, local=False)
        self.send_notification("notifications/initialized")
        self._announce(result)

    def _announce(self, result: dict[str, Any]) -> None:
        assert self.revision and self.peer_capabilities is not None and self.peer_info is not None
        self._events.append(
            SessionInitialized(
                self.revision.name, self.peer_info, self.peer_capabilities, self.instructions
            )
        )
        assert self._start_id is not None
        method = "initialize" if self.revision.era is Era.LEGACY else "server/discover"
        self._events.append(ResponseReceived(self._start_id, method, result))

    def _accept_initialize_result(self, result: dict[str, Any]) -> MCPError | None:
        version = result.get("protocolVersion")
        capabilities = result.get("capabilities")
        server_info = result.get("serverInfo")
        if not isinstance(version, str):
            return MCPError(ErrorCode.INVALID_REQUEST, "initialize result lacks a protocolVersion")
        legacy = [v for v in self.supported_versions if REVISIONS[v].era is Era.LEGACY]
        if version not in legacy:
            return UnsupportedProtocolVersion(
                message=(
                    f"the server chose protocol version {version!r}, which this client "
                    f"does not support (supported: {', '.join(legacy)})"
                ),
                data={"supported": legacy, "requested": version},
            )
        if not isinstance(capabilities, dict):
            return MCPError(ErrorCode.INVALID_REQUEST, "initialize result lacks capabilities")
        if not isinstance(server_info, dict):
            return MCPError(ErrorCode.INVALID_REQUEST, "initialize result lacks serverInfo")
        self.revision = REVISIONS[version]
        self.peer_capabilities = capabilities
        self.peer_info = server_info
        instructions = result.get("instructions")
        self.instructions = instructions if isinstance(instructions, str) else None
        return None

    def _on_discover_response(
        self, pending: _Outgoing, result: dict[str, Any] | None, error: MCPError | None
    ) -> None:
        if error is not None:
            if error.code == ErrorCode.UNSUPPORTED_PROTOCOL_VERSION:
                # A modern server: retry at a mutual modern version, never fall back.
                if self._retry_with_mutual_version(pending, error):
                    return
                supported = (
                    (error.data or {}).get("supported") if isinstance(error.data, dict) else None
                )
                if (
                    self.mode == "auto"
                    and isinstance(supported, list)
                    and any(v in supported for v in self.supported_versions)
                    and self.requested_version
                ):
                    self._fall_back_to_legacy(pending, None)
                    return
            elif self.mode == "auto" and self.requested_version:
                self._fall_back_to_legacy(pending, None)  # a legacy server
                return
            self._transition(Trigger.RECV_INITIALIZE_ERROR, local=False)
            self._events.append(RequestFailed(pending.origin, pending.method, error))
            return
        assert result is not None
        problem = self._accept_discover_result(result)
        if problem is not None:
            if self.mode == "auto" and self.requested_version:
                self._fall_back_to_legacy(pending, None)
                return
            self._transition(Trigger.RECV_INITIALIZE_ERROR, local=False)
            self._events.append(RequestFailed(pending.origin, pending.method, problem))
            return
        self._transition(Trigger.RECV_DISCOVER_RESULT, local=False)
        self._announce(result)

    def _accept_discover_result(self, result: dict[str, Any]) -> MCPError | None:
        versions = result.get("supportedVersions")
        capabilities = result.get("capabilities")
        if not isinstance(versions, list) or not isinstance(capabilities, dict):
            return MCPError(
                ErrorCode.INVALID_REQUEST,
                "server/discover result lacks supportedVersions or capabilities",
            )
        mutual = [v for v in modern_versions(self.supported_versions) if v in versions]
        if not mutual:
            return UnsupportedProtocolVersion(
                message="the server supports no modern revision this client speaks",
                data={"supported": versions, "requested": self.modern_version},
            )
        if self.modern_version not in mutual:
            self.modern_version = mutual[-1]
        meta = result.get("_meta")
        info = meta.get(META_SERVER_INFO) if isinstance(meta, dict) else None
        self.revision = REVISIONS[self.modern_version]
        self.peer_capabilities = capabilities
        self.peer_info = info if isinstance(info, dict) else {}
        instructions = result.get("instructions")
        self.instructions = instructions if isinstance(instructions, str) else None
        self.discovery = result
        return None

    def _retry_with_mutual_version(self, pending: _Outgoing, error: MCPError) -> bool:
        data = error.data if isinstance(error.data, dict) else {}
        supported = data.get("supported")
        if not isinstance(supported, list):
            return False
        mutual = [v for v in modern_versions(self.supported_versions) if v in supported]
        if not mutual:
            return False
        # Compare with the version this request used: others may have moved on already.
        if mutual[-1] == (pending.version or self.modern_version):
            # The server lists the very version it refused (a deployment mid-upgrade,
            # say): retry once at it, then let the error stand.
            if pending.origin in self._same_version_retries:
                return False
            self._remember(self._same_version_retries, pending.origin)
        self.modern_version = mutual[-1]
        params = pending.params
        if pending.method == "server/discover":
            params = {"_meta": self._modern_meta(None)}
        self._resend(pending, params, None)
        return True

    def _resend(
        self, pending: _Outgoing, params: dict[str, Any] | None, extra: dict[str, Any] | None
    ) -> RequestId:
        trigger = (
            Trigger.LEGACY_FALLBACK
            if self.state is SessionState.INITIALIZING
            else Trigger.SEND_REQUEST
        )
        return self._send_request(
            pending.method,
            params,
            now=None,
            timeout=None,
            progress=False,
            trigger=trigger,
            origin=pending.origin,
            rounds=pending.rounds + (1 if extra is not None else 0),
            deadline=pending.deadline,
            token=pending.progress_token,
            extra=extra,
        )

    # MRTR ---------------------------------------------------------------------------

    def _on_input_required(self, pending: _Outgoing, result: dict[str, Any]) -> None:
        try:
            check_input_required(pending.method, result)
        except ValueError as exc:
            self._forget_progress(pending)
            self._events.append(
                RequestFailed(
                    pending.origin,
                    pending.method,
                    MCPError(ErrorCode.INVALID_REQUEST, f"invalid input_required result: {exc}"),
                )
            )
            return
        # ``rounds`` counts wire requests; the limit counts answered rounds (as the SDKs do).
        if pending.rounds > self.max_input_rounds:
            self._forget_progress(pending)
            self._events.append(
                RequestFailed(
                    pending.origin,
                    pending.method,
                    InputRoundsExceeded(
                        message=f"{pending.method} still needed input after "
                        f"{pending.rounds} rounds (limit {self.max_input_rounds})"
                    ),
                )
            )
            return
        state = result.get("requestState")
        pending.params = dict(pending.params or {})
        self._paused[pending.origin] = attrs.evolve(
            pending, params={**pending.params, "__state__": state}
        )
        self._events.append(
            InputRequired(
                pending.origin,
                pending.method,
                dict(result.get("inputRequests") or {}),
                state,
                pending.rounds,
            )
        )

    def provide_input(self, request_id: RequestId, responses: dict[str, Any]) -> RequestId:
        """Retry an :class:`InputRequired` request with the answers, keyed as asked.

        ``requestState`` is echoed exactly as received; the retry gets a new
        wire id, but events keep using ``request_id``.
        """
        paused = self._paused.pop(request_id, None)
        if paused is None:
            raise LocalProtocolError(f"request {request_id!r} is not waiting for input")
        params = dict(paused.params or {})
        state = params.pop("__state__", None)
        extra: dict[str, Any] = {"inputResponses": responses}
        if state is not None:
            extra["requestState"] = state
        return self._resend(attrs.evolve(paused, params=params), params, extra)

    def fail_input(self, request_id: RequestId, error: MCPError) -> None:
        """Give up on an :class:`InputRequired` request (no handler could answer)."""
        paused = self._paused.pop(request_id, None)
        if paused is None:
            raise LocalProtocolError(f"request {request_id!r} is not waiting for input")
        self._forget_progress(paused)
        self._events.append(RequestFailed(request_id, paused.method, error))

    # Notifications --------------------------------------------------------------------

    def _on_notification(self, notification: JSONRPCNotification) -> None:
        params = notification.params or {}
        meta = params.get("_meta")
        subscription = meta.get(META_SUBSCRIPTION_ID) if isinstance(meta, dict) else None
        if notification.method == "notifications/subscriptions/acknowledged":
            # The tag is the listen request's wire id; events report its origin.
            origin = self._listen_of_wire(subscription)
            if origin is not None and isinstance(params.get("notifications"), dict):
                self._events.append(SubscriptionAcknowledged(origin, params["notifications"]))
            else:
                self._events.append(
                    ProtocolViolation(
                        RemoteProtocolError(
                            "acknowledgement for an unknown subscription",
                            request_id=subscription if is_request_id(subscription) else None,
                        )
                    )
                )
            return
        if subscription is not None and self.is_modern:
            origin = self._listen_of_wire(subscription)
            if origin is None:
                return  # a late notification for a subscription we ended
            problem = check_params(notification.method, params)
            if problem:
                self._events.append(
                    ProtocolViolation(RemoteProtocolError(problem, code=ErrorCode.INVALID_PARAMS))
                )
                return
            self._events.append(NotificationReceived(notification.method, params, origin))
            return
        super()._on_notification(notification)

    def _on_cancelled(self, params: dict[str, Any]) -> None:
        request_id = params.get("requestId")
        origin = self._listen_of_wire(request_id)
        if origin is not None:
            # The server tore down one of our subscriptions (2026-07-28; otherwise
            # a cancellation names the sender's own request, never ours).
            wire_id = self._wire_of.pop(origin)
            pending = self._outgoing.pop(wire_id)
            reason = params.get("reason")
            self._events.append(
                RequestFailed(
                    origin,
                    pending.method,
                    RequestCancelled(
                        message=f"the server ended the request: {reason or 'no reason given'}"
                    ),
                )
            )
            return
        super()._on_cancelled(params)

    def _listen_of_wire(self, wire_id: Any) -> RequestId | None:
        """The origin of our pending ``subscriptions/listen`` with this wire id, on a
        stateless session: the only request of ours a server tags notifications
        with, acknowledges, or may end."""
        if not self.is_modern or not is_request_id(wire_id):
            return None  # peer input: may be unhashable, or a bool that would equal 1
        pending = self._outgoing.get(wire_id)
        if pending is None or pending.method != "subscriptions/listen":
            return None
        return pending.origin

    # Gates -------------------------------------------------------------------------

    def _peer_request_methods(self, revision: Revision | None) -> frozenset[str]:
        if revision is None:
            return frozenset({"ping"})
        return revision.server_requests

    _incoming_gates = SERVER_REQUEST_GATES
    _outgoing_request_gates = CLIENT_REQUEST_GATES
    _outgoing_notification_gates = CLIENT_NOTIFICATION_GATES

    def _own_request_methods(self, revision: Revision) -> frozenset[str]:
        return revision.client_requests

    def _own_notification_methods(self, revision: Revision) -> frozenset[str]:
        return revision.client_notifications

    def _peer_notification_methods(self, revision: Revision) -> frozenset[str]:
        return revision.server_notifications

    def send_roots_list_changed(self) -> None:
        self.send_notification("notifications/roots/list_changed")


@attrs.define
class _Listen:
    """One open ``subscriptions/listen`` on the server side."""

    notifications: dict[str, Any]


class ServerSession(Session):
    """The server side of MCP, serving both eras at once.

    An ``initialize`` starts a handshake session; a request whose ``_meta``
    names a 2026-07-28 protocol version is served statelessly beside it.
    The core answers ``initialize``, ``ping``, ``logging/setLevel``,
    ``server/discover`` and ``subscriptions/listen`` itself and refuses
    (-32601) methods of capabilities it did not advertise.
    """

    role = Role.SERVER

    def __init__(
        self,
        *,
        capabilities: dict[str, Any] | None = None,
        server_info: dict[str, Any] | None = None,
        instructions: str | None = None,
        supported_versions: Iterable[str] = ALL_REVISIONS,
        cache_hints: CacheHints | None = None,
        max_message_size: int = _json.DEFAULT_MAX_MESSAGE_SIZE,
        max_depth: int = _json.DEFAULT_MAX_DEPTH,
    ) -> None:
        super().__init__(
            capabilities=capabilities,
            info=server_info or DEFAULT_SERVER_INFO,
            supported_versions=supported_versions,
            max_message_size=max_message_size,
            max_depth=max_depth,
        )
        self.instructions = instructions
        self.cache_hints = cache_hints or CacheHints()
        #: The level the client chose with logging/setLevel (None: send all).
        self.log_level: str | None = None
        #: Resource URIs the client subscribed to.
        self.subscriptions: set[str] = set()
        self._legacy_versions = [
            v for v in self.supported_versions if REVISIONS[v].era is Era.LEGACY
        ]
        self._modern_versions = modern_versions(self.supported_versions)
        self._listens: dict[RequestId, _Listen] = {}

    # The stateless era ----------------------------------------------------------------

    def _on_request(self, request: JSONRPCRequest) -> None:
        params = request.params or {}
        if self._modern_versions and (
            is_modern_request(params)
            or request.method in ("server/discover", "subscriptions/listen")
        ):
            self._on_modern_request(request, params)
            return
        if not self._legacy_versions:
            self._refuse_legacy(request, params)
            return
        super()._on_request(request)

    def _refuse_legacy(self, request: JSONRPCRequest, params: dict[str, Any]) -> None:
        """A modern-only server: name the versions it supports (spec: basic/versioning)."""
        if request.method == "initialize":
            requested = params.get("protocolVersion")
            error: MCPError = UnsupportedProtocolVersion(
                message="this server only speaks the stateless revision(s) "
                + ", ".join(self._modern_versions),
                data={
                    "supported": list(self._modern_versions),
                    "requested": requested if isinstance(requested, str) else "",
                },
            )
        else:
            error = MCPError(
                ErrorCode.INVALID_PARAMS,
                f"params._meta[{META_PROTOCOL_VERSION!r}] is required (2026-07-28)",
            )
        self._refuse(request.id, error)

    def _refuse(self, request_id: RequestId, error: MCPError) -> None:
        self._events.append(
            ProtocolViolation(
                RemoteProtocolError(
                    error.message, code=error.code, request_id=request_id, data=error.data
                )
            )
        )
        self._queue_response(request_id, self._error_obj(request_id, error))

    def _on_modern_request(self, request: JSONRPCRequest, params: dict[str, Any]) -> None:
        method = request.method
        try:
            if request.id in self._incoming or request.id in self._listens:
                raise MCPError(
                    ErrorCode.INVALID_REQUEST,
                    f"request id {request.id!r} is already in use by an unanswered request",
                )
            meta = parse_request_meta(params)
            if meta.protocol_version not in self._modern_versions:
                raise UnsupportedProtocolVersion(
                    message=f"unsupported protocol version {meta.protocol_version!r}",
                    data={
                        # Only versions a request's _meta may name (not the handshake ones).
                        "supported": list(self._modern_versions),
                        "requested": meta.protocol_version,
                    },
                )
            revision = REVISIONS[meta.protocol_version]
            if method not in revision.client_requests:
                raise MCPError(ErrorCode.METHOD_NOT_FOUND, f"method not found: {method!r}")
            gate = CLIENT_REQUEST_GATES.get(method)
            if gate and not _has_capability(self.capabilities, gate):
                raise MCPError(
                    ErrorCode.METHOD_NOT_FOUND,
                    f"method not found: {method!r} (capability {'.'.join(gate)} not advertised)",
                )
            problem = check_params(method, params)
            if problem:
                raise MCPError(ErrorCode.INVALID_PARAMS, problem)
            if method == "subscriptions/listen" and not isinstance(
                params.get("notifications"), dict
            ):
                raise MCPError(
                    ErrorCode.INVALID_PARAMS,
                    "subscriptions/listen: 'notifications' must be an object",
                )
        except MCPError as error:
            self._refuse(request.id, error)
            return
        if method == "server/discover":
            self._queue_response(
                request.id,
                {"jsonrpc": "2.0", "id": request.id, "result": self._discover_result(revision)},
            )
            return
        if method == "subscriptions/listen":
            self._open_listen(request.id, params["notifications"])
            return
        token = params["_meta"].get("progressToken")
        if not (isinstance(token, (str, int)) and not isinstance(token, bool)):
            token = None
        self._incoming[request.id] = _Incoming(method, params, token, meta=meta)
        self._events.append(RequestReceived(request.id, method, params, token, meta))

    def _modern_capabilities(self, revision: Revision) -> dict[str, Any]:
        return _trim_capabilities(self._effective_capabilities(), revision.server_capabilities)

    def _discover_result(self, revision: Revision) -> dict[str, Any]:
        result: dict[str, Any] = {
            # The versions later requests may name in _meta (the handshake ones cannot be).
            "supportedVersions": list(self._modern_versions),
            "capabilities": self._modern_capabilities(revision),
        }
        if self.instructions is not None:
            result["instructions"] = self.instructions
        return shape_result(
            "server/discover",
            result,
            server_info=_trim_info(self.info, revision),
            cache=self.cache_hints,
        )

    def _result_message(
        self, request_id: RequestId, incoming: _Incoming, result: dict[str, Any]
    ) -> dict[str, Any]:
        if incoming.meta is None:
            return super()._result_message(request_id, incoming, result)
        if result.get("resultType") == "input_required":
            try:
                check_input_required(incoming.method, result)
                missing = missing_input_capabilities(
                    result.get("inputRequests") or {}, incoming.meta.client_capabilities
                )
            except ValueError as exc:
                raise LocalProtocolError(str(exc)) from None
            if missing:
                # Never send an interim result the client cannot act on.
                return self._error_obj(request_id, missing_capability_error(missing))
        revision = REVISIONS[incoming.meta.protocol_version]
        shaped = shape_result(
            incoming.method,
            result,
            server_info=_trim_info(self.info, revision),
            cache=self.cache_hints,
        )
        return {"jsonrpc": "2.0", "id": request_id, "result": shaped}

    # Subscriptions ----------------------------------------------------------------------

    def _open_listen(self, request_id: RequestId, requested: dict[str, Any]) -> None:
        honoured = honoured_filter(requested, self._effective_capabilities())
        self._listens[request_id] = _Listen(honoured)
        self.send_notification(
            "notifications/subscriptions/acknowledged",
            {"_meta": {META_SUBSCRIPTION_ID: request_id}, "notifications": honoured},
            stateless=True,
            related_request=request_id,
        )

    @property
    def open_subscriptions(self) -> frozenset[RequestId]:
        """Ids of the ``subscriptions/listen`` requests still open."""
        return frozenset(self._listens)

    def end_subscription(self, request_id: RequestId) -> None:
        """Tear down a subscription gracefully (the final, empty result)."""
        if self._listens.pop(request_id, None) is None:
            raise LocalProtocolError(f"no open subscription {request_id!r}")
        meta = {
            META_SUBSCRIPTION_ID: request_id,
            META_SERVER_INFO: _trim_info(self.info, REVISIONS[LATEST_MODERN_REVISION]),
        }
        self._outbox.append(
            (
                {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "result": {"resultType": "complete", "_meta": meta},
                },
                request_id,
            )
        )

    def _on_cancelled(self, params: dict[str, Any]) -> None:
        request_id = params.get("requestId")
        if is_request_id(request_id) and request_id in self._listens:
            del self._listens[request_id]  # the client closed its subscription
            return
        super()._on_cancelled(params)

    def _notify_listeners(self, method: str, params: dict[str, Any], wants: Any) -> bool:
        sent = False
        for listen_id, listen in self._listens.items():
            if wants(listen.notifications):
                tagged = {**params, "_meta": {META_SUBSCRIPTION_ID: listen_id}}
                self.send_notification(method, tagged, stateless=True, related_request=listen_id)
                sent = True
        return sent

    def _on_notification(self, notification: JSONRPCNotification) -> None:
        # A stateless client may cancel without any handshake session.
        if notification.method == "notifications/cancelled" and self._modern_versions:
            params = notification.params or {}
            request_id = params.get("requestId")
            if not is_request_id(request_id):
                super()._on_notification(notification)  # reported as malformed there
                return
            incoming = self._incoming.get(request_id)
            if (
                request_id in self._listens
                or (incoming is not None and incoming.meta is not None)
                # No handshake session: a cancel that lost the race with our answer.
                or (incoming is None and self.state is SessionState.IDLE)
            ):
                problem = check_params(notification.method, params)
                if problem is None:
                    self._on_cancelled(params)
                return
        super()._on_notification(notification)

    # The handshake era ----------------------------------------------------------------

    def _on_initialize(self, request_id: RequestId, params: dict[str, Any]) -> None:
        requested = params["protocolVersion"]
        # Echo the client's version when we support it, else offer our latest.
        version = requested if requested in self._legacy_versions else self._legacy_versions[-1]
        self.revision = REVISIONS[version]
        self.peer_capabilities = params["capabilities"]
        self.peer_info = params["clientInfo"]
        result: dict[str, Any] = {
            "protocolVersion": version,
            "capabilities": _trim_capabilities(
                self._effective_capabilities(), self.revision.server_capabilities
            ),
            "serverInfo": _trim_info(self.info, self.revision),
        }
        if self.instructions is not None:
            result["instructions"] = self.instructions
        self._queue_response(request_id, {"jsonrpc": "2.0", "id": request_id, "result": result})

    def _effective_capabilities(self) -> dict[str, Any]:
        return self.capabilities

    def _on_initialized(self) -> None:
        assert self.revision and self.peer_info is not None and self.peer_capabilities is not None
        self._events.append(
            SessionInitialized(
                self.revision.name, self.peer_info, self.peer_capabilities, self.instructions
            )
        )

    def _handle_locally(self, request_id: RequestId, method: str, params: dict[str, Any]) -> bool:
        if method != "logging/setLevel":
            return False
        self.log_level = params["level"]
        self._queue_response(request_id, {"jsonrpc": "2.0", "id": request_id, "result": {}})
        return True

    def _after_response(self, incoming: _Incoming, result: dict[str, Any]) -> None:
        uri = incoming.params.get("uri")
        if incoming.method == "resources/subscribe" and isinstance(uri, str):
            self.subscriptions.add(uri)
        elif incoming.method == "resources/unsubscribe" and isinstance(uri, str):
            self.subscriptions.discard(uri)

    def _peer_request_methods(self, revision: Revision | None) -> frozenset[str]:
        if revision is None:
            return frozenset({"ping", "initialize"}) | _all_client_requests()
        return revision.client_requests

    _incoming_gates = CLIENT_REQUEST_GATES
    _outgoing_request_gates = SERVER_REQUEST_GATES
    _outgoing_notification_gates = SERVER_NOTIFICATION_GATES

    def _own_request_methods(self, revision: Revision) -> frozenset[str]:
        return revision.server_requests

    def _own_notification_methods(self, revision: Revision) -> frozenset[str]:
        return revision.server_notifications

    def _peer_notification_methods(self, revision: Revision) -> frozenset[str]:
        return revision.client_notifications

    # Conveniences -------------------------------------------------------------

    def is_stateless_request(self, request_id: RequestId) -> bool:
        """Whether an open request came in the stateless (2026-07-28) era."""
        incoming = self._incoming.get(request_id)
        return incoming is not None and incoming.meta is not None

    def send_log_message(
        self,
        level: str,
        data: Any,
        logger: str | None = None,
        *,
        request_id: RequestId | None = None,
    ) -> bool:
        """Send ``notifications/message`` unless it is below the client's level.

        For a stateless request (``request_id`` given) the level is the one its
        ``_meta`` asked for, and nothing is sent if it asked for none.
        """
        if level not in LOG_LEVELS:
            raise LocalProtocolError(f"unknown log level {level!r}")
        incoming = self._incoming.get(request_id) if request_id is not None else None
        stateless = incoming is not None and incoming.meta is not None
        threshold = (
            incoming.meta.log_level if stateless and incoming and incoming.meta else self.log_level
        )
        if stateless and threshold is None:
            return False
        if threshold is not None and LOG_LEVELS.index(level) < LOG_LEVELS.index(threshold):
            return False
        if not stateless and self.revision is None:
            return False  # no handshake session to log to
        params: dict[str, Any] = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        self.send_notification(
            "notifications/message", params, stateless=stateless, related_request=request_id
        )
        return True

    def send_resource_updated(self, uri: str) -> bool:
        """Send ``notifications/resources/updated`` to whoever subscribed to ``uri``."""
        sent = self._notify_listeners(
            "notifications/resources/updated",
            {"uri": uri},
            lambda f: uri in (f.get("resourceSubscriptions") or ()),
        )
        if uri in self.subscriptions and self.state is SessionState.READY:
            self.send_notification("notifications/resources/updated", {"uri": uri})
            sent = True
        return sent

    def send_list_changed(self, kind: str) -> bool:
        """Send ``notifications/{kind}/list_changed`` (tools, prompts or resources)
        on the handshake session and to the subscriptions that asked for it."""
        if kind not in ("tools", "prompts", "resources"):
            raise LocalProtocolError(f"no list_changed notification for {kind!r}")
        method = f"notifications/{kind}/list_changed"
        sent = self._notify_listeners(method, {}, lambda f: f.get(f"{kind}ListChanged") is True)
        if self.state is SessionState.READY:
            self.send_notification(method)
            sent = True
        return sent


def _all_client_requests() -> frozenset[str]:
    return frozenset().union(*(REVISIONS[v].client_requests for v in HANDSHAKE_REVISIONS))


# Sub-capabilities that only exist from 2025-11-25 (elicitation modes, sampling tools/context).
_LATE_SUBCAPABILITIES = {"elicitation": ("form", "url"), "sampling": ("context", "tools")}


def _trim_capabilities(
    capabilities: dict[str, Any], known: frozenset[str], revision: Revision | None = None
) -> dict[str, Any]:
    """Keep only what the revision defines, so a peer never sees (and never acts on)
    a capability its revision does not have, such as URL elicitation before 2025-11-25."""
    trimmed = {k: v for k, v in capabilities.items() if k in known}
    if revision is not None and revision.name < "2025-11-25":
        for name, fields in _LATE_SUBCAPABILITIES.items():
            value = trimmed.get(name)
            if isinstance(value, dict):
                trimmed[name] = {k: v for k, v in value.items() if k not in fields}
    return trimmed


def _trim_info(info: dict[str, Any], revision: Revision) -> dict[str, Any]:
    return {k: v for k, v in info.items() if k in revision.implementation_fields}
