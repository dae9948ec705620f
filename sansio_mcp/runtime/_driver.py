"""Backend-neutral routing of session events to waiting callers and handlers.

An adapter owns the I/O and the concurrency; it gives the :class:`Driver`
two primitives (``spawn`` a handler task, ``cancel`` one) and a ``wake``
function per :class:`Waiter`.  Everything else, which event resolves which
call, how a handler's outcome becomes a response, lives here once.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Required, TypedDict

from .._client_session import ClientSession
from .._errors import ConnectionClosedError, ErrorCode, LocalProtocolError, MCPError, failure_text
from .._events import (
    CancelRequested,
    ConnectionClosed,
    InputRequired,
    NotificationReceived,
    ProgressReceived,
    ProtocolViolation,
    RequestFailed,
    RequestReceived,
    ResponseReceived,
    SessionInitialized,
    SubscriptionAcknowledged,
)
from .._jsonrpc import RequestId
from .._ndjson import NEED_DATA
from .._session import Session

__all__ = [
    "Driver",
    "HostHandlers",
    "InputHandler",
    "NotificationHandler",
    "ProgressCallback",
    "RequestHandler",
    "SubscriptionSink",
    "Waiter",
    "respond_with_failure",
    "respond_with_result",
]

logger = logging.getLogger("sansio_mcp")

#: Protocol violations one connection logs as warnings; the rest go to debug, so a
#: peer sending garbage cannot flood the log.
MAX_VIOLATION_WARNINGS = 10

#: Answers a peer request: with the result itself when it needs no waiting (the
#: driver then responds at once, without a task), or with an awaitable of it.
RequestHandler = Callable[[RequestReceived], Awaitable[dict[str, Any]] | dict[str, Any]]
NotificationHandler = Callable[[str, dict[str, Any]], Awaitable[None]]
InputHandler = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]


class HostHandlers(TypedDict, total=False):
    """A session host's handlers, as keywords (what a runner passes on to its host)."""

    handle_request: Required[RequestHandler]
    handle_notification: NotificationHandler | None
    answer_input: InputHandler | None


#: Told of a request's progress: ``(progress, total, message)``.
ProgressCallback = Callable[[float, float | None, str | None], Any]
SinkFilter = Callable[[str, dict[str, Any]], bool]


class SubscriptionSink:
    """Where the notifications of one subscription go (adapters subclass it)."""

    def acknowledged(self, notifications: dict[str, Any]) -> None:
        """The server confirmed the subscription and what it will send."""

    def deliver(self, method: str, params: dict[str, Any]) -> None:
        """One notification of the subscription."""

    def ended(self, error: MCPError | None) -> None:
        """No more will come: the server finished the subscription (``None``), or
        it failed (its stream broke, the connection closed)."""


class Waiter:
    """A one-shot slot for the outcome of one of our requests."""

    __slots__ = ("_wake", "done", "error", "on_progress", "owner", "result")

    def __init__(
        self,
        wake: Callable[[], None],
        on_progress: ProgressCallback | None = None,
        owner: object = None,
    ) -> None:
        self._wake = wake
        self.on_progress = on_progress
        #: Whose request it is, as its sender said (see :meth:`Driver.owner_of`).
        self.owner = owner
        self.done = False
        self.result: dict[str, Any] | None = None
        self.error: MCPError | None = None

    def resolve(self, result: dict[str, Any]) -> None:
        self.result, self.done = result, True
        self._wake()

    def fail(self, error: MCPError) -> None:
        self.error, self.done = error, True
        self._wake()

    def outcome(self) -> dict[str, Any]:
        """The result, or raise the error."""
        if self.error is not None:
            raise self.error
        assert self.result is not None
        return self.result


# The hooks' defaults, shared by every driver (one made per stateless HTTP request).
def _nothing() -> None:
    pass


def _unobserved(method: str, params: dict[str, Any]) -> None:
    pass


def _detached(event: RequestReceived) -> dict[str, Any]:
    raise MCPError(ErrorCode.INTERNAL_ERROR, "the session's host is done")


def _not_spawned(request_id: RequestId | None, fn: Callable[[], Awaitable[None]]) -> None:
    pass


def _not_cancelled(request_id: RequestId) -> None:
    pass


class Driver:
    """Routes the events of one session.

    ``spawn(request_id, fn)`` must run ``fn()`` concurrently (so a slow
    handler never holds up the others) and ``cancel(request_id)`` must cancel
    that task if it is still running.
    """

    def __init__(
        self,
        session: Session,
        *,
        handle_request: RequestHandler,
        handle_notification: NotificationHandler | None,
        spawn: Callable[[RequestId | None, Callable[[], Awaitable[None]]], None],
        cancel: Callable[[RequestId], None],
        answer_input: InputHandler | None = None,
    ) -> None:
        self.session = session
        #: The session's events (see :meth:`Session.event_queue`).
        self._events = session.event_queue()
        #: What each kind of event does (its class's table, found once per driver).
        self._table = _EVENT_TABLES.get(type(self)) or _event_table(type(self))
        if type(session).next_event is not Session.next_event:
            # A subclass that refines next_event (to filter or audit) is asked for
            # each event, not bypassed by popping its queue.
            self.process_events = self._process_through_next_event  # type: ignore[method-assign]
        self._handle_request = handle_request
        self._handle_notification = handle_notification
        self._spawn = spawn
        self._cancel = cancel
        self._answer_input = answer_input
        self._waiters: dict[RequestId, Waiter] = {}
        #: Open subscriptions by their listen request id.
        self.subscriptions: dict[RequestId, SubscriptionSink] = {}
        #: Sinks fed every matching notification of a handshake session
        #: (``listen`` emulated on the handshake era).
        self.session_sinks: list[tuple[SinkFilter, SubscriptionSink]] = []
        self.closed = False
        self._warned = 0
        self.initialized: SessionInitialized | None = None
        #: Called after a handler queued output, so the adapter flushes it.
        self.on_output: Callable[[], None] = _nothing
        #: Called once the connection closed (a client keeping a peer alive hooks in here).
        self.on_closed: Callable[[], None] = _nothing
        #: Called when the transport lost a stream it holds to the peer, which may be
        #: gone (an HTTP session's GET stream ended): whoever keeps it alive checks now.
        self.on_trouble: Callable[[], None] = _nothing
        #: Sees every notification first (the client's cache invalidation hooks in here).
        self.observe_notification: Callable[[str, dict[str, Any]], None] = _unobserved

    def start_request(
        self,
        method: str,
        params: dict[str, Any] | None,
        waiter: Waiter,
        *,
        now: float,
        timeout: float | None,
        related_request: RequestId | None = None,
    ) -> RequestId:
        """Queue a request whose outcome ``waiter`` will receive."""
        request_id = self.session.send_request(
            method,
            params,
            now=now,
            timeout=timeout,
            progress=waiter.on_progress is not None,
            related_request=related_request,
        )
        self._waiters[request_id] = waiter
        return request_id

    def owner_of(self, request_id: RequestId | None) -> object:
        """The ``owner`` our request ``request_id`` was sent with, while it waits for
        its answer (None after, or when it had none): whom a server request related
        to it is for."""
        waiter = self._waiters.get(request_id) if request_id is not None else None
        return None if waiter is None else waiter.owner

    def register(self, request_id: RequestId, waiter: Waiter) -> None:
        """Attach ``waiter`` to a request queued directly on the session."""
        self._waiters[request_id] = waiter

    def abandon(self, request_id: RequestId) -> None:
        """The caller stopped waiting (it was cancelled): cancel on the wire."""
        self._waiters.pop(request_id, None)
        if request_id in self.session.pending_requests:
            try:
                self.session.cancel(request_id, "the caller cancelled the request")
            except LocalProtocolError:  # not cancellable on the wire now (initialize)
                self.session.forget(request_id)

    def detach(self) -> None:
        """Call back into nothing any more: its host is done (see ``HostBase.release``).
        What it held of the host (to spawn, cancel and answer handlers, to flush) goes,
        so the host, this driver and the session are freed as soon as nobody uses them,
        by reference counting rather than by the collector (they refer to each other)."""
        self._handle_request = _detached
        self._handle_notification = self._answer_input = None
        self._spawn = _not_spawned
        self._cancel = _not_cancelled
        self.on_output = self.on_closed = self.on_trouble = _nothing
        self.observe_notification = _unobserved

    def process_events(self) -> None:
        """Drain the session's events and act on each (by its class's event table)."""
        events, table = self._events, self._table
        while events:
            event = events.popleft()
            act = table.get(type(event))
            if act is not None:
                act(self, event)

    def _process_through_next_event(self) -> None:
        next_event, table = self.session.next_event, self._table
        while (event := next_event()) is not NEED_DATA:
            act = table.get(type(event))
            if act is not None:
                act(self, event)

    def _on_response(self, event: ResponseReceived) -> None:
        waiter = self._waiters.pop(event.request_id, None)
        if waiter is not None:
            waiter.resolve(event.result)
        self._end_subscription(event.request_id, None)

    def _on_failure(self, event: RequestFailed) -> None:
        waiter = self._waiters.pop(event.request_id, None)
        if waiter is not None:
            waiter.fail(event.error)
        self._end_subscription(event.request_id, event.error)

    def _on_progress(self, event: ProgressReceived) -> None:
        waiter = self._waiters.get(event.request_id)
        if waiter is not None and waiter.on_progress is not None:
            waiter.on_progress(event.progress, event.total, event.message)

    def _on_cancel(self, event: CancelRequested) -> None:
        self._cancel(event.request_id)

    def _on_notification(self, event: NotificationReceived) -> None:
        self.observe_notification(event.method, event.params)
        if event.subscription_id is not None:
            sink = self.subscriptions.get(event.subscription_id)
            if sink is not None:
                sink.deliver(event.method, event.params)
            return
        for wants, session_sink in self.session_sinks:
            if wants(event.method, event.params):
                session_sink.deliver(event.method, event.params)
        if self._handle_notification is not None:
            self._spawn(None, self._notify_factory(event))

    def _on_acknowledged(self, event: SubscriptionAcknowledged) -> None:
        sink = self.subscriptions.get(event.request_id)
        if sink is not None:
            sink.acknowledged(event.notifications)

    def _on_input_required(self, event: InputRequired) -> None:
        self._spawn(None, self._input_factory(event))

    def _on_initialized(self, event: SessionInitialized) -> None:
        self.initialized = event

    def _on_closed(self, event: ConnectionClosed) -> None:
        self.closed = True
        closed = ConnectionClosedError(message="the connection closed")
        for request_id in list(self.subscriptions):
            self._end_subscription(request_id, closed)
        for _, session_sink in self.session_sinks:
            session_sink.ended(closed)
        self.on_closed()

    def _log_violation(self, event: ProtocolViolation) -> None:
        """A request refused with an error answer is the peer's own mistake, and it was
        told (debug); what could not be answered may need an operator (a warning, the
        first few per connection). A peer that has not yet sent one JSON line is not yet
        known to speak MCP: if it never does, the connection's error says so, once."""
        message = event.error.message
        if event.refused:
            logger.debug("refused a request of the peer: %s", message)
        elif not self.session.heard_from_peer or self._warned >= MAX_VIOLATION_WARNINGS:
            logger.debug("protocol violation by the peer: %s", message)
        else:
            self._warned += 1
            logger.warning("protocol violation by the peer: %s", message)
            if self._warned == MAX_VIOLATION_WARNINGS:
                logger.warning("further protocol violations by this peer are logged at DEBUG")

    def _end_subscription(self, request_id: RequestId, error: MCPError | None) -> None:
        sink = self.subscriptions.pop(request_id, None)
        if sink is not None:
            sink.ended(error)

    def _input_factory(self, event: InputRequired) -> Callable[[], Awaitable[None]]:
        async def gather() -> None:
            await self.gather_input(event)

        return gather

    async def gather_input(self, event: InputRequired) -> None:
        """Answer an MRTR round with the client's handlers, then retry the request."""
        assert isinstance(self.session, ClientSession)
        responses: dict[str, Any] = {}
        failure: MCPError | None = None
        for key, request in event.input_requests.items():
            method = request.get("method") if isinstance(request, dict) else None
            if not isinstance(method, str) or self._answer_input is None:
                failure = MCPError(
                    ErrorCode.INVALID_REQUEST, f"input request {key!r} cannot be answered"
                )
                break
            params = request.get("params")
            try:
                responses[key] = await self._answer_input(
                    method, params if isinstance(params, dict) else {}
                )
            except MCPError as error:
                failure = MCPError(
                    error.code,
                    f"the server needs {method} to finish {event.method}, "
                    f"and this client cannot answer it: {error.message}",
                )
                break
            except Exception as exc:
                logger.exception("input handler for %s failed", method)
                failure = MCPError(ErrorCode.INTERNAL_ERROR, f"the {method} handler failed: {exc}")
                break
        if event.request_id not in self.session.pending_requests:
            return  # the caller gave up meanwhile
        if failure is not None:
            self.session.fail_input(event.request_id, failure)
            self.process_events()
        else:
            self.session.provide_input(event.request_id, responses)
        self.on_output()

    def _notify_factory(self, event: NotificationReceived) -> Callable[[], Awaitable[None]]:
        # The handler is taken now: a task started before detach() still has it.
        handle = self._handle_notification
        assert handle is not None

        async def notify() -> None:
            try:
                await handle(event.method, event.params)
            except Exception:
                logger.exception("notification handler for %s failed", event.method)

        return notify

    def _begin(self, event: RequestReceived) -> None:
        """Answer ``event`` at once if its handler can, else in a task of its own."""
        try:
            outcome = self._handle_request(event)
        except Exception as exc:
            self._answer_failure(event, exc)
            return
        if isinstance(outcome, dict):
            try:
                self.session.respond(event.request_id, outcome)
            except LocalProtocolError as exc:
                refused_result(self.session, event.request_id, event.method, exc)
            return
        self._spawn(event.request_id, self._finish_factory(event, outcome))

    def _finish_factory(
        self, event: RequestReceived, outcome: Awaitable[dict[str, Any]]
    ) -> Callable[[], Awaitable[None]]:
        # Apart from _begin: its closure would make cells on every request, answered
        # at once or not.
        async def finish() -> None:
            try:
                result = await outcome
            except Exception as exc:
                self._answer_failure(event, exc)
            else:
                respond_with_result(self.session, event.request_id, event.method, result)
            self.on_output()

        return finish

    def _answer_failure(self, event: RequestReceived, exc: Exception) -> None:
        respond_with_failure(self.session, event.request_id, event.method, exc)


#: The method of :class:`Driver` (or a subclass's override) each event kind goes to.
_EVENT_METHODS: dict[type[Any], str] = {
    ResponseReceived: "_on_response",
    RequestFailed: "_on_failure",
    ProgressReceived: "_on_progress",
    RequestReceived: "_begin",
    CancelRequested: "_on_cancel",
    NotificationReceived: "_on_notification",
    SubscriptionAcknowledged: "_on_acknowledged",
    InputRequired: "_on_input_required",
    SessionInitialized: "_on_initialized",
    ProtocolViolation: "_log_violation",
    ConnectionClosed: "_on_closed",
}


#: What each kind of session event does, per driver class (events of other kinds are
#: ignored): one table per class, not one of bound methods per driver (a stateless
#: HTTP request makes a driver); a subclass's override is honoured.
_EVENT_TABLES: dict[type[Driver], dict[type[Any], Callable[[Any, Any], None]]] = {}


def _event_table(cls: type[Driver]) -> dict[type[Any], Callable[[Any, Any], None]]:
    table = _EVENT_TABLES[cls] = {kind: getattr(cls, name) for kind, name in _EVENT_METHODS.items()}
    return table


def respond_with_result(session: Session, request_id: RequestId, method: str, result: Any) -> None:
    """Answer the request with a handler's result, or with -32603 if the session refuses
    it (a malformed MRTR result, say): the request is answered either way."""
    try:
        session.respond(request_id, result)
    except LocalProtocolError as exc:
        refused_result(session, request_id, method, exc)


def refused_result(
    session: Session, request_id: RequestId, method: str, exc: LocalProtocolError
) -> None:
    """The session refused a handler's result with ``exc``: answer -32603 instead,
    unless nothing is owed any more (:func:`respond_with_result`'s second half)."""
    if request_id not in session.open_requests:
        return  # cancelled meanwhile, or answered already: nothing is owed
    logger.error("handler for %s returned a result that cannot be sent: %s", method, exc)
    session.respond_error(
        request_id,
        ErrorCode.INTERNAL_ERROR,
        f"internal error: {failure_text(exc, with_kind=False)}",
    )


def respond_with_failure(
    session: Session, request_id: RequestId, method: str, exc: Exception
) -> None:
    """Answer the request with the error a handler raised: an :class:`MCPError` as
    itself, anything else as -32603 (the handler's bug, logged with its traceback)."""
    if isinstance(exc, MCPError):
        session.respond_error(request_id, exc)
        return
    logger.error("handler for %s failed", method, exc_info=exc)
    session.respond_error(
        request_id, ErrorCode.INTERNAL_ERROR, f"internal error: {failure_text(exc)}"
    )
