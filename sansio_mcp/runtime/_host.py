"""The backend-neutral half of a session host, and the client built on it.

A host wraps a session and its :class:`Driver`; what differs between Trio
and asyncio (a one-shot signal, the clock, shielding from cancellation,
how output is flushed, how tasks are spawned) is supplied by a subclass.
The request/await logic, including cancelling on the wire when the caller
gives up, is written once, here.  Nothing here does I/O: it only awaits the
subclass's primitives.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from .._client_session import ClientSession
from .._errors import ConnectionClosedError
from .._events import RequestReceived
from .._jsonrpc import RequestId
from .._server_session import ServerSession
from .._session import Session
from .._state import Role
from .._websocket import WebSocketFraming
from ._backend import Backend, Cancellable, Signal
from ._client import ClientAPI, ClientHandlers, ProgressCallback, Subscription
from ._driver import Driver, InputHandler, NotificationHandler, RequestHandler, Waiter
from ._server import Context

C = TypeVar("C", bound=ClientAPI)

__all__ = [
    "BufferedSubscription",
    "HostBase",
    "HostContext",
    "Signal",
    "keep_websocket_alive",
    "start_client",
]


async def keep_websocket_alive(framing: WebSocketFraming, host: HostBase, interval: float) -> None:
    """Ping the peer every ``interval`` seconds until the connection closes, so
    intermediaries do not drop an idle connection."""
    while not framing.closed:
        await host.backend.sleep(interval)
        framing.ping()
        await host.flush()


class BufferedSubscription(Subscription):
    """A subscription's notifications, buffered up to ``buffer`` and woken by a
    backend :class:`Signal` (one consumer)."""

    def __init__(self, buffer: int, new_signal: Callable[[], Signal]) -> None:
        self._items: deque[tuple[str, dict[str, Any]]] = deque()
        self._buffer = buffer
        self._new_signal = new_signal
        self._ready = new_signal()
        self._acknowledged = new_signal()
        self.acknowledged_filter: dict[str, Any] = {}
        self.dropped = 0

    def acknowledged(self, notifications: dict[str, Any]) -> None:
        self.acknowledged_filter = notifications
        self._acknowledged.set()

    def deliver(self, method: str, params: dict[str, Any]) -> None:
        if len(self._items) >= self._buffer:
            # A consumer this far behind has lost the thread anyway; count, don't block I/O.
            self.dropped += 1
            return
        self._items.append((method, params))
        self._ready.set()

    async def wait_acknowledged(self) -> None:
        await self._acknowledged.wait()

    async def __anext__(self) -> tuple[str, dict[str, Any]]:
        while not self._items:
            await self._ready.wait()
            self._ready = self._new_signal()
        return self._items.popleft()


class HostBase:
    """Requests, waiting and handler tasks, on top of adapter primitives:
    :meth:`new_signal`, :meth:`now`, :meth:`flush`, :meth:`shielded`,
    :meth:`spawn_task` and :meth:`start_cancellable`; it runs :meth:`run_timer`
    in a task it can cancel."""

    #: The event-loop primitives (set by each backend's host class).
    backend: Backend

    def __init__(
        self,
        session: Session,
        *,
        handle_request: RequestHandler,
        handle_notification: NotificationHandler | None,
        answer_input: InputHandler | None,
    ) -> None:
        self.session = session
        # The handler tasks of the peer's requests, by request id (cancelled one by one).
        self._handlers: dict[RequestId, Cancellable] = {}
        self.driver = Driver(
            session,
            handle_request=handle_request,
            handle_notification=handle_notification,
            spawn=self._spawn_handler,
            cancel=self._cancel_handler,
            answer_input=answer_input,
        )
        # Set when a deadline was added; the timer makes a fresh one each time round.
        self._timer_changed: Signal = self.new_signal()
        # When the timer next wakes by itself (inf: only when told).
        self._timer_wakes_at = math.inf

    @property
    def reading_waits_for_output(self) -> bool:
        """Whether input is read only as fast as our output leaves.

        A server does this, so a client that never reads cannot make it
        buffer without bound.  A client never does: if both peers stopped
        reading while their large messages waited, neither would go on.
        """
        return self.session.role is Role.SERVER

    # Primitives ---------------------------------------------------------------------

    def new_signal(self) -> Signal:
        raise NotImplementedError

    def now(self) -> float:
        raise NotImplementedError

    def spawn_task(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        """Run ``fn(*args)`` in a task of the host's group."""
        raise NotImplementedError

    def start_cancellable(
        self, fn: Callable[[], Awaitable[Any]], on_done: Callable[[], None] | None = None
    ) -> Cancellable:
        """Run ``fn()`` in a task of the host's group that ``cancel()`` ends;
        ``on_done()`` once it has ended, however (even cancelled before it began)."""
        raise NotImplementedError

    async def flush(self) -> None:
        """Send what the session has queued."""
        raise NotImplementedError

    def send_now(self) -> bool:
        """Send what the session has queued without waiting, if this host can;
        True when it will all go out without anyone awaiting :meth:`flush`."""
        return False

    async def shielded(self, step: Callable[[], Awaitable[None]]) -> None:
        """Run ``step`` to completion even while being cancelled."""
        raise NotImplementedError

    #: Whether ``attach`` leaves the timer task to the first deadline (True where most
    #: hosts never have one, as an HTTP server's host of a stateless request).
    timer_on_demand = False

    def rearm_timer(self, deadline: float | None = None) -> None:
        """A deadline was added: the timer must look again (started if it is not
        running), unless it wakes by ``deadline`` anyway (a call's time limit later
        than one already armed: the timer sees it when it wakes, at no cost now)."""
        self._start_timer()
        if deadline is None or deadline < self._timer_wakes_at:
            self._timer_changed.set()

    def _start_timer(self) -> None:
        """Run :meth:`run_timer` in a task of the host's own, if it is not running
        yet and the host is attached (then ``attach`` starts it if a deadline is
        already set); a no-op where the timer is someone else's."""
        raise NotImplementedError

    async def run_timer(self) -> None:
        """Enforce the session's deadlines until cancelled: sleep until the earliest
        one (or until :meth:`rearm_timer` says one was added), then expire what is due
        and send what that queued."""
        backend = self.backend
        while True:
            # A fresh signal before reading the deadline: a deadline added after
            # this read sets it, so none is missed.
            changed = self._timer_changed = self.new_signal()
            deadline = self.session.next_deadline()
            self._timer_wakes_at = math.inf if deadline is None else deadline
            if deadline is None:
                await changed.wait()
                continue
            rearmed = False
            async with backend.move_on_after(max(0.0, deadline - self.now())):
                await changed.wait()
                rearmed = True
            if rearmed:
                continue
            self.session.handle_timer(self.now())
            self.driver.process_events()
            # Never waiting for output: a peer that stops reading must not stop the clock.
            if not self.send_now():
                await self.flush()

    def new_subscription(self, buffer: int) -> Subscription:
        return BufferedSubscription(buffer, self.new_signal)

    # Requests -------------------------------------------------------------------------

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        related_request: RequestId | None = None,
    ) -> dict[str, Any]:
        """Send a request and wait for its result (raises :class:`MCPError`)."""
        if self.driver.closed:
            raise ConnectionClosedError(message="the connection is closed")
        done = self.new_signal()
        waiter = Waiter(done.set, on_progress)
        now = self.now()
        request_id = self.driver.start_request(
            method,
            params,
            waiter,
            now=now,
            timeout=timeout,
            related_request=related_request,
        )
        deadline = None if timeout is None else now + timeout
        return await self._await(request_id, waiter, done, timeout is not None, deadline)

    async def wait_for(self, request_id: RequestId, *, timed: bool = False) -> dict[str, Any]:
        """Wait for a request queued directly on the session."""
        done = self.new_signal()
        waiter = Waiter(done.set)
        self.driver.register(request_id, waiter)
        return await self._await(request_id, waiter, done, timed)

    async def _await(
        self,
        request_id: RequestId,
        waiter: Waiter,
        done: Signal,
        timed: bool,
        deadline: float | None = None,
    ) -> dict[str, Any]:
        if timed:
            self.rearm_timer(deadline)
        # A request never waits for its own output to go out: a peer that stops
        # reading must not keep a time limit or a cancellation from taking effect.
        try:
            if not self.send_now():
                await self.flush()
            await done.wait()
        except BaseException:
            if not waiter.done:
                # The caller gave up (cancelled): cancel on the wire too.
                self.driver.abandon(request_id)
                if not self.send_now():
                    await self.shielded(self.flush)
            raise
        return waiter.outcome()

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        self.session.send_notification(method, params)
        await self.flush()

    # Handler tasks --------------------------------------------------------------------

    def _spawn_handler(
        self, request_id: RequestId | None, fn: Callable[[], Awaitable[None]]
    ) -> None:
        if request_id is None:
            self.spawn_task(fn)
            return

        def forget() -> None:
            if self._handlers.get(request_id) is handle:
                del self._handlers[request_id]

        handle = self.start_cancellable(fn, forget)
        self._handlers[request_id] = handle

    def _cancel_handler(self, request_id: RequestId) -> None:
        handle = self._handlers.get(request_id)
        if handle is not None:
            handle.cancel()

    def cancel_handlers(self) -> None:
        """Cancel every handler task still running."""
        for handle in list(self._handlers.values()):
            handle.cancel()


class HostContext(Context):
    """A handler's :class:`Context` on a session host: requests to the client go
    through the host, output is flushed by it, sleeping is the backend's.
    ``now`` (seconds since the epoch) dates the request's sealed state."""

    def __init__(self, host: HostBase, event: RequestReceived, *, now: float) -> None:
        assert isinstance(host.session, ServerSession)
        super().__init__(
            request_id=event.request_id,
            method=event.method,
            params=event.params,
            progress_token=event.progress_token,
            session=host.session,
            meta=event.meta,
            now=now,
        )
        self.host = host

    async def send_request(
        self, method: str, params: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        return await self.host.request(method, params, related_request=self.request_id)

    async def flush(self) -> None:
        await self.host.flush()

    async def sleep(self, seconds: float) -> None:
        await self.host.backend.sleep(seconds)

    def clock(self) -> float:
        return self.host.backend.clock()

    def new_signal(self) -> Signal:
        return self.host.new_signal()

    def start_background(self, fn: Callable[[], Awaitable[Any]]) -> Cancellable:
        return self.host.start_cancellable(fn)


async def start_client(
    host: HostBase,
    session: ClientSession,
    handlers: ClientHandlers,
    initialize_timeout: float | None,
    client_class: type[C],
) -> C:
    """Run the session's start (handshake or discover) and wrap it in a client."""
    request_id = session.start(now=host.now(), timeout=initialize_timeout)
    await host.wait_for(request_id, timed=initialize_timeout is not None)
    return client_class(host, session, handlers)
