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
from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from . import _json
from ._errors import (
    ConnectionClosedError,
    ErrorCode,
    LocalProtocolError,
    MCPError,
    RemoteProtocolError,
    RequestTimeout,
    UnsupportedProtocolVersion,
)
from ._events import (
    CancelRequested,
    ConnectionClosed,
    Event,
    NotificationReceived,
    ProgressReceived,
    ProtocolViolation,
    RequestFailed,
    RequestReceived,
    ResponseReceived,
    SessionInitialized,
)
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
from ._ndjson import NEED_DATA, NdjsonFramer
from ._params import LOG_LEVELS, check_params
from ._state import Role, SessionState, Trigger, next_state, trigger_for
from ._versions import (
    CLIENT_NOTIFICATION_GATES,
    CLIENT_REQUEST_GATES,
    HANDSHAKE_REVISIONS,
    REVISIONS,
    SERVER_NOTIFICATION_GATES,
    SERVER_REQUEST_GATES,
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


@attrs.define
class _Incoming:
    method: str
    params: dict[str, Any]
    progress_token: str | int | None
    last_progress: float | None = None


@attrs.define
class _Batch:
    pending: set[RequestId]
    responses: list[dict[str, Any]]


def _has_capability(capabilities: dict[str, Any] | None, path: Sequence[str]) -> bool:
    node: Any = capabilities or {}
    for i, key in enumerate(path):
        if not isinstance(node, dict) or key not in node:
            return False
        node = node[key]
        if i > 0 and node is False:
            return False
    return node is not None and node is not False


class Session:
    """Shared machinery of both roles. Use :class:`ClientSession` or :class:`ServerSession`."""

    role: Role

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
        self._outbox: list[Any] = []
        self._next_id = 0
        self._outgoing: dict[RequestId, _Outgoing] = {}
        self._progress_tokens: dict[str | int, RequestId] = {}
        self._cancelled_outgoing: OrderedDict[RequestId, None] = OrderedDict()
        self._incoming: dict[RequestId, _Incoming] = {}
        self._cancelled_incoming: OrderedDict[RequestId, None] = OrderedDict()
        self._batch_of: dict[RequestId, _Batch] = {}

    # ------------------------------------------------------------------ state

    @property
    def protocol_version(self) -> str | None:
        return self.revision.name if self.revision else None

    @property
    def pending_requests(self) -> frozenset[RequestId]:
        """Ids of our requests that have not ended yet."""
        return frozenset(self._outgoing)

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
        self._framer.feed(data)
        while True:
            line = self._framer.next_line()
            if line is NEED_DATA:
                break
            if isinstance(line, RemoteProtocolError):
                self._violation(line)
                continue
            assert isinstance(line, bytes)
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
        if len(text) > self.max_message_size:
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
            self._forget_progress(pending)
            self._events.append(
                RequestFailed(
                    error.request_id,
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
        if request.id in self._incoming:
            duplicate = MCPError(
                ErrorCode.INVALID_REQUEST,
                f"request id {request.id!r} is already in use by an unanswered request",
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
            self._outbox.append(self._error_obj(request.id, duplicate))
            return
        try:
            self._check_incoming_request(method, params)
            trigger = trigger_for(method, is_request=True, sending=False)
            if not self._allowed(trigger):
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
        self._transition(trigger, local=False)
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
        gate = self._incoming_gates().get(method)
        if gate and (method != "completion/complete" or (revision and revision.completion_gated)):
            if not _has_capability(self.capabilities, gate):
                raise MCPError(
                    ErrorCode.METHOD_NOT_FOUND,
                    f"method not found: {method!r} (capability {'.'.join(gate)} not advertised)",
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
        self._forget_progress(pending)
        if pending.method == "initialize":
            self._on_initialize_response(request_id, result, error)
            return
        if error is not None:
            self._events.append(RequestFailed(request_id, pending.method, error))
        else:
            assert result is not None
            self._events.append(ResponseReceived(request_id, pending.method, result))

    # Role hooks ---------------------------------------------------------------

    def _peer_request_methods(self, revision: Revision | None) -> frozenset[str]:
        raise NotImplementedError

    def _incoming_gates(self) -> dict[str, tuple[str, ...]]:
        raise NotImplementedError

    def _own_request_methods(self, revision: Revision) -> frozenset[str]:
        raise NotImplementedError

    def _own_notification_methods(self, revision: Revision) -> frozenset[str]:
        raise NotImplementedError

    def _outgoing_request_gates(self) -> dict[str, tuple[str, ...]]:
        raise NotImplementedError

    def _outgoing_notification_gates(self) -> dict[str, tuple[str, ...]]:
        raise NotImplementedError

    def _on_initialize(self, request_id: RequestId, params: dict[str, Any]) -> None:
        raise NotImplementedError  # pragma: no cover - clients reject it earlier

    def _handle_locally(self, request_id: RequestId, method: str, params: dict[str, Any]) -> bool:
        """Answer a request the core serves itself; True if it did."""
        return False

    def _on_initialized(self) -> None:
        raise NotImplementedError  # pragma: no cover - servers only

    def _on_initialize_response(
        self, request_id: RequestId, result: dict[str, Any] | None, error: MCPError | None
    ) -> None:
        raise NotImplementedError  # pragma: no cover - clients only

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
    ) -> RequestId:
        """Queue a request and return its id.

        ``timeout`` (seconds, needs ``now``) arms a deadline that
        :meth:`handle_timer` enforces.  ``progress`` asks the peer for
        progress notifications (they arrive as :class:`ProgressReceived`).
        ``experimental`` lets a method outside the negotiated revision through.
        """
        if method == "initialize":
            raise LocalProtocolError("use ClientSession.initialize() to start the handshake")
        if params is not None and not isinstance(params, dict):
            raise LocalProtocolError("params must be a dict")
        self._check_outgoing_request(method, params or {}, experimental=experimental)
        return self._send_request(method, params, now=now, timeout=timeout, progress=progress)

    def _send_request(
        self,
        method: str,
        params: dict[str, Any] | None,
        *,
        now: float | None,
        timeout: float | None,
        progress: bool,
    ) -> RequestId:
        if timeout is not None and now is None:
            raise LocalProtocolError("a timeout needs the current time: pass now=")
        self._transition(trigger_for(method, is_request=True, sending=True), local=True)
        request_id = self._next_id
        self._next_id += 1
        token: str | int | None = None
        if progress:
            token = request_id
            params = dict(params or {})
            meta = dict(params.get("_meta") or {})
            meta["progressToken"] = token
            params["_meta"] = meta
            self._progress_tokens[token] = request_id
        deadline = now + timeout if timeout is not None and now is not None else None
        self._outgoing[request_id] = _Outgoing(method, deadline, token)
        obj: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            obj["params"] = params
        self._outbox.append(obj)
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
        gate = self._outgoing_request_gates().get(method)
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

    def send_notification(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Queue a notification (capability-checked against our own advertisement)."""
        if self.state is SessionState.CLOSED:
            raise LocalProtocolError("the session is closed")
        if params is not None and not isinstance(params, dict):
            raise LocalProtocolError("params must be a dict")
        revision = self.revision
        if revision is not None and method not in self._own_notification_methods(revision):
            raise LocalProtocolError(
                f"{method!r} is not a {self.role.value} notification in revision {revision.name}"
            )
        gate = self._outgoing_notification_gates().get(method)
        if gate and not _has_capability(self.capabilities, gate):
            raise LocalProtocolError(
                f"cannot send {method!r}: we did not advertise capability {'.'.join(gate)}"
            )
        problem = check_params(method, params or {})
        if problem:
            raise LocalProtocolError(problem)
        self._transition(trigger_for(method, is_request=False, sending=True), local=True)
        obj: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            obj["params"] = params
        self._outbox.append(obj)

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
        self._after_response(incoming, result)
        self._queue_response(request_id, {"jsonrpc": "2.0", "id": request_id, "result": result})

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
        pending = self._outgoing.get(request_id)
        if pending is None:
            raise LocalProtocolError(f"no pending request with id {request_id!r}")
        if pending.method == "initialize":
            raise LocalProtocolError("initialize must not be cancelled")
        params: dict[str, Any] = {"requestId": request_id}
        if reason is not None:
            params["reason"] = reason
        self.send_notification("notifications/cancelled", params)
        del self._outgoing[request_id]
        self._forget_progress(pending)
        self._remember(self._cancelled_outgoing, request_id)

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
        if message is not None:
            if self.revision is not None and self.revision.name >= "2025-03-26":
                params["message"] = message
        self.send_notification("notifications/progress", params)
        incoming.last_progress = progress
        return True

    def send_ping(self, *, now: float | None = None, timeout: float | None = None) -> RequestId:
        return self.send_request("ping", None, now=now, timeout=timeout)

    # ------------------------------------------------------------ timers, end

    def next_deadline(self) -> float | None:
        """The earliest request deadline, or None if nothing is armed."""
        deadlines = [p.deadline for p in self._outgoing.values() if p.deadline is not None]
        return min(deadlines) if deadlines else None

    def handle_timer(self, now: float) -> list[RequestId]:
        """Expire requests whose deadline has passed; return their ids.

        Each becomes a :class:`RequestFailed` with :class:`RequestTimeout`
        and is cancelled on the wire (initialize, which may not be
        cancelled, just fails).
        """
        expired = [
            rid for rid, p in self._outgoing.items() if p.deadline is not None and p.deadline <= now
        ]
        for request_id in expired:
            pending = self._outgoing[request_id]
            if pending.method == "initialize":
                del self._outgoing[request_id]
                self._transition(Trigger.INITIALIZE_TIMEOUT, local=True)
            elif self._allowed(Trigger.SEND_UTILITY):
                self.cancel(request_id, "request timed out")
            else:
                # notifications/cancelled may not be sent in this state (a ping
                # before or during the handshake): just forget the request.
                del self._outgoing[request_id]
                self._forget_progress(pending)
                self._remember(self._cancelled_outgoing, request_id)
            self._events.append(
                RequestFailed(
                    request_id,
                    pending.method,
                    RequestTimeout(message=f"{pending.method} timed out"),
                )
            )
        return expired

    def close(self) -> None:
        """End the session: every pending request fails with ConnectionClosedError."""
        if self.state is SessionState.CLOSED:
            return
        self._transition(Trigger.CLOSE, local=True)
        for request_id, pending in list(self._outgoing.items()):
            self._events.append(
                RequestFailed(
                    request_id,
                    pending.method,
                    ConnectionClosedError(message="the connection closed before a response"),
                )
            )
        self._outgoing.clear()
        self._progress_tokens.clear()
        self._incoming.clear()
        self._events.append(ConnectionClosed())

    # ----------------------------------------------------------------- output

    def messages_to_send(self) -> list[Any]:
        """Take the queued messages as JSON values (dicts, or lists for batches)."""
        out, self._outbox = self._outbox, []
        return out

    def data_to_send(self) -> bytes:
        """Take the queued messages as NDJSON bytes."""
        if not self._outbox:
            return b""
        out, self._outbox = self._outbox, []
        return "".join([_json.dumps(obj) + "\n" for obj in out]).encode("utf-8")

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
            self._outbox.append(obj)
            return
        batch.pending.discard(request_id)
        batch.responses.append(obj)
        self._maybe_flush_batch(batch)

    def _maybe_flush_batch(self, batch: _Batch) -> None:
        if not batch.pending and batch.responses:
            self._outbox.append(batch.responses)
            batch.responses = []

    def _forget_progress(self, pending: _Outgoing) -> None:
        if pending.progress_token is not None:
            self._progress_tokens.pop(pending.progress_token, None)

    @staticmethod
    def _remember(memory: OrderedDict[RequestId, None], request_id: RequestId) -> None:
        memory[request_id] = None
        while len(memory) > _CANCELLED_MEMORY:
            memory.popitem(last=False)


class ClientSession(Session):
    """The client side of an MCP session (handshake revisions)."""

    role = Role.CLIENT

    def __init__(
        self,
        *,
        capabilities: dict[str, Any] | None = None,
        client_info: dict[str, Any] | None = None,
        supported_versions: Iterable[str] = HANDSHAKE_REVISIONS,
        protocol_version: str | None = None,
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
        if protocol_version is not None and protocol_version not in self.supported_versions:
            raise LocalProtocolError(
                f"protocol version {protocol_version!r} is not among {self.supported_versions}"
            )
        #: The version we ask for in initialize (our latest by default).
        self.requested_version = protocol_version or self.supported_versions[-1]
        self.instructions: str | None = None

    def initialize(self, *, now: float | None = None, timeout: float | None = None) -> RequestId:
        """Queue the initialize request."""
        revision = REVISIONS[self.requested_version]
        params = {
            "protocolVersion": self.requested_version,
            "capabilities": _trim_capabilities(self.capabilities, revision.client_capabilities),
            "clientInfo": _trim_info(self.info, revision),
        }
        return self._send_request("initialize", params, now=now, timeout=timeout, progress=False)

    def _on_initialize_response(
        self, request_id: RequestId, result: dict[str, Any] | None, error: MCPError | None
    ) -> None:
        if error is None:
            assert result is not None
            error = self._accept_initialize_result(result)
        if error is not None:
            self._transition(Trigger.RECV_INITIALIZE_ERROR, local=False)
            self._events.append(RequestFailed(request_id, "initialize", error))
            return
        assert result is not None
        self._transition(Trigger.RECV_INITIALIZE_RESULT, local=False)
        self.send_notification("notifications/initialized")
        assert self.revision and self.peer_capabilities is not None and self.peer_info is not None
        self._events.append(
            SessionInitialized(
                self.revision.name, self.peer_info, self.peer_capabilities, self.instructions
            )
        )
        self._events.append(ResponseReceived(request_id, "initialize", result))

    def _accept_initialize_result(self, result: dict[str, Any]) -> MCPError | None:
        version = result.get("protocolVersion")
        capabilities = result.get("capabilities")
        server_info = result.get("serverInfo")
        if not isinstance(version, str):
            return MCPError(ErrorCode.INVALID_REQUEST, "initialize result lacks a protocolVersion")
        if version not in self.supported_versions:
            return UnsupportedProtocolVersion(
                message=(
                    f"the server chose protocol version {version!r}, which this client "
                    f"does not support (supported: {', '.join(self.supported_versions)})"
                ),
                data={"supported": list(self.supported_versions), "requested": version},
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

    def _peer_request_methods(self, revision: Revision | None) -> frozenset[str]:
        if revision is None:
            return frozenset({"ping"})
        return revision.server_requests

    def _incoming_gates(self) -> dict[str, tuple[str, ...]]:
        return dict(SERVER_REQUEST_GATES)

    def _own_request_methods(self, revision: Revision) -> frozenset[str]:
        return revision.client_requests

    def _own_notification_methods(self, revision: Revision) -> frozenset[str]:
        return revision.client_notifications

    def _outgoing_request_gates(self) -> dict[str, tuple[str, ...]]:
        return dict(CLIENT_REQUEST_GATES)

    def _outgoing_notification_gates(self) -> dict[str, tuple[str, ...]]:
        return dict(CLIENT_NOTIFICATION_GATES)

    def send_roots_list_changed(self) -> None:
        self.send_notification("notifications/roots/list_changed")


class ServerSession(Session):
    """The server side of an MCP session (handshake revisions).

    The core answers ``initialize``, ``ping`` and ``logging/setLevel`` itself
    and refuses (-32601) methods of capabilities it did not advertise.
    """

    role = Role.SERVER

    def __init__(
        self,
        *,
        capabilities: dict[str, Any] | None = None,
        server_info: dict[str, Any] | None = None,
        instructions: str | None = None,
        supported_versions: Iterable[str] = HANDSHAKE_REVISIONS,
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
        #: The level the client chose with logging/setLevel (None: send all).
        self.log_level: str | None = None
        #: Resource URIs the client subscribed to.
        self.subscriptions: set[str] = set()

    def _on_initialize(self, request_id: RequestId, params: dict[str, Any]) -> None:
        requested = params["protocolVersion"]
        # Echo the client's version when we support it, else offer our latest.
        version = requested if requested in self.supported_versions else self.supported_versions[-1]
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

    def _incoming_gates(self) -> dict[str, tuple[str, ...]]:
        return dict(CLIENT_REQUEST_GATES)

    def _own_request_methods(self, revision: Revision) -> frozenset[str]:
        return revision.server_requests

    def _own_notification_methods(self, revision: Revision) -> frozenset[str]:
        return revision.server_notifications

    def _outgoing_request_gates(self) -> dict[str, tuple[str, ...]]:
        return dict(SERVER_REQUEST_GATES)

    def _outgoing_notification_gates(self) -> dict[str, tuple[str, ...]]:
        return dict(SERVER_NOTIFICATION_GATES)

    # Conveniences -------------------------------------------------------------

    def send_log_message(self, level: str, data: Any, logger: str | None = None) -> bool:
        """Send ``notifications/message`` unless it is below the client's level."""
        if level not in LOG_LEVELS:
            raise LocalProtocolError(f"unknown log level {level!r}")
        if self.log_level is not None and LOG_LEVELS.index(level) < LOG_LEVELS.index(
            self.log_level
        ):
            return False
        params: dict[str, Any] = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        self.send_notification("notifications/message", params)
        return True

    def send_resource_updated(self, uri: str) -> bool:
        """Send ``notifications/resources/updated`` if the client subscribed to ``uri``."""
        if uri not in self.subscriptions:
            return False
        self.send_notification("notifications/resources/updated", {"uri": uri})
        return True

    def send_list_changed(self, kind: str) -> None:
        """Send ``notifications/{kind}/list_changed`` (tools, prompts or resources)."""
        if kind not in ("tools", "prompts", "resources"):
            raise LocalProtocolError(f"no list_changed notification for {kind!r}")
        self.send_notification(f"notifications/{kind}/list_changed")


def _all_client_requests() -> frozenset[str]:
    return frozenset().union(*(r.client_requests for r in REVISIONS.values()))


def _trim_capabilities(capabilities: dict[str, Any], known: frozenset[str]) -> dict[str, Any]:
    """Drop capability keys the revision does not define (keeps old peers' schemas valid)."""
    return {k: v for k, v in capabilities.items() if k in known}


def _trim_info(info: dict[str, Any], revision: Revision) -> dict[str, Any]:
    return {k: v for k, v in info.items() if k in revision.implementation_fields}
