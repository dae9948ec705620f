"""The session host, written once for every backend, and the client built on it.

A host wraps a session and its :class:`Driver`: it runs the handler tasks, the
timer and the flusher in the :class:`TaskGroup` it is attached to, and awaits
requests.  Signals, the clock, shielding and tasks come from its :attr:`backend`;
how queued output leaves is an :class:`Output` given to it (a pipe's sender, a
transport, HTTP exchanges).  Nothing here does I/O: it only awaits the backend's
primitives.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from .._errors import ConnectionClosedError
from .._jsonrpc import RequestId
from .._session import Session
from .._state import Role
from ._backend import Backend, Cancellable, Signal, TaskGroup
from ._driver import Driver, InputHandler, NotificationHandler, RequestHandler, Waiter

# The client's half, for annotations only: a server's host loads no client (import time).
if TYPE_CHECKING:
    from .._client_session import ClientSession
    from ._client import ClientAPI, ClientHandlers, ProgressCallback, Subscription

C = TypeVar("C", bound="ClientAPI")

__all__ = [
    "SHIELDED_GRACE",
    "Framing",
    "HostBase",
    "Output",
    "Signal",
    "hosted",
    "start_client",
]

#: Seconds a shielded step (cleanup while being cancelled) may take at the most.
SHIELDED_GRACE = 2.0


class Framing(Protocol):
    """Turns a stream's bytes into session input and session output into bytes
    (the session itself for NDJSON; a WebSocket or other framing otherwise)."""

    def receive_data(self, data: bytes | bytearray) -> None: ...

    def data_to_send(self) -> bytes: ...


class Output(Protocol):
    """How a host's queued output leaves."""

    @property
    def flusher(self) -> Callable[[], Awaitable[None]] | None:
        """The one long-lived task that sends what could not go at once (None: no
        such task; output goes at once, or from tasks of its own)."""

    def schedule(self) -> None:
        """The session queued output: send it now or soon (never waiting)."""

    def send_now(self) -> bool:
        """Send what is queued without waiting, if this output can; True when it
        will all go out without anyone awaiting :meth:`flush`."""
        ...

    async def flush(self) -> None:
        """Send what is queued, and wait until it has gone out."""


class HostBase:
    """Requests, waiting, handler tasks, the timer and the flusher over a session:
    the tasks run in the :class:`TaskGroup` given to :meth:`attach`; signals, the
    clock and shielding come from :attr:`backend`; output leaves by ``output``."""

    #: The event-loop primitives (each adapter's host class names its own).
    backend: Backend
    #: How queued output leaves.
    output: Output
    #: Whether this host enforces its session's deadlines (False where the session
    #: belongs to something that does, as the bridge host does for its servers').
    runs_timer = True
    #: Whether ``attach`` leaves the timer task to the first deadline (True where most
    #: hosts never have one, as an HTTP server's host of a stateless request).
    timer_on_demand = False
    # Class defaults, not set per host (a stateless HTTP request makes one): the task
    # group once attached, the timer and flusher tasks once started.
    _group: TaskGroup | None = None
    _timer: Cancellable | None = None
    _flusher: Cancellable | None = None
    # Set when a deadline was added; the timer makes a fresh one each time round
    # (None until it first does: a host that never runs one makes none).
    _timer_changed: Signal | None = None
    # When the timer next wakes by itself (inf: only when told).
    _timer_wakes_at = math.inf

    def __init__(
        self,
        session: Session,
        *,
        handle_request: RequestHandler,
        handle_notification: NotificationHandler | None = None,
        answer_input: InputHandler | None = None,
        output: Output | None = None,
    ) -> None:
        """``output``: how queued output leaves; None for a host that is its own
        output (its class says so, as :class:`RoutedOutput` does), kept as no
        attribute (which would make the host refer to itself, a cycle)."""
        self.session = session
        if output is None:
            schedule = self.schedule  # type: ignore[attr-defined]
        else:
            self.output = output
            schedule = output.schedule
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
        self.driver.on_output = schedule

    @property
    def reading_waits_for_output(self) -> bool:
        """Whether input is read only as fast as our output leaves.

        A server does this, so a client that never reads cannot make it
        buffer without bound.  A client never does: if both peers stopped
        reading while their large messages waited, neither would go on.
        """
        return self.session.role is Role.SERVER

    # Tasks ----------------------------------------------------------------------------

    def attach(self, group: TaskGroup) -> None:
        """Run handler tasks, the timer and the flusher in ``group``."""
        self._group = group
        if not self.timer_on_demand or self.session.next_deadline() is not None:
            self._start_timer()
        flusher = self.output.flusher
        if flusher is not None:
            self._flusher = group.start_cancellable(flusher)

    def spawn_task(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        """Run ``fn(*args)`` in a task of the host's group."""
        assert self._group is not None, "attach() the host to a task group first"
        self._group.start_soon(fn, *args)

    def start_cancellable(
        self, fn: Callable[[], Awaitable[Any]], on_done: Callable[[], None] | None = None
    ) -> Cancellable:
        """Run ``fn()`` in a task of the host's group that ``cancel()`` ends;
        ``on_done()`` once it has ended, however (even cancelled before it began)."""
        assert self._group is not None, "attach() the host to a task group first"
        return self._group.start_cancellable(fn, on_done)

    def release(self) -> None:
        """The host is done (its session dropped, its handlers cancelled): its driver
        calls back into it no more, so that a stateless request's host, driver and
        session go when the request does, not when the collector next runs."""
        self.driver.detach()

    def cancel_all_handlers(self) -> None:
        """The host is done (its HTTP exchange is over): cancel its handlers, its
        timer and its flusher (otherwise every finished stateless request would
        leave those tasks parked)."""
        if self._handlers:
            self.cancel_handlers()
        for task in (self._timer, self._flusher):
            if task is not None:
                task.cancel()

    # Primitives ---------------------------------------------------------------------

    def new_signal(self) -> Signal:
        return self.backend.new_signal()

    def new_subscription(self, buffer: int) -> Subscription:
        """Deprecated: use :meth:`ClientAPI.new_subscription` (a host no longer makes
        them, so a server's host need not load the client's half)."""
        from ._client import Subscription

        warnings.warn(
            "HostBase.new_subscription is deprecated; use ClientAPI.new_subscription",
            DeprecationWarning,
            stacklevel=2,
        )
        return Subscription(buffer, self.new_signal)

    def now(self) -> float:
        return self.backend.clock()

    async def sleep(self, seconds: float) -> None:
        await self.backend.sleep(seconds)

    def _schedule_flush(self) -> None:
        """Send what the session queued, now or soon (what the hub calls)."""
        self.output.schedule()

    async def flush(self) -> None:
        """Send what the session has queued, and wait until it has gone out."""
        await self.output.flush()

    def send_now(self) -> bool:
        """Send what the session has queued without waiting, if this host can;
        True when it will all go out without anyone awaiting :meth:`flush`."""
        return self.output.send_now()

    async def shielded(self, step: Callable[[], Awaitable[None]]) -> None:
        """Run ``step`` to completion even while being cancelled, for at most
        :data:`SHIELDED_GRACE` seconds: a step that waits for this host's own tasks
        (a flush waits for the flusher) would wait forever once the cancellation
        has ended them too."""
        backend = self.backend

        async def bounded() -> None:
            async with backend.move_on_after(SHIELDED_GRACE):
                await step()

        await backend.shielded(bounded)

    # The timer ------------------------------------------------------------------------

    def rearm_timer(self, deadline: float | None = None) -> None:
        """A deadline was added: the timer must look again (started if it is not
        running), unless it wakes by ``deadline`` anyway (a call's time limit later
        than one already armed: the timer sees it when it wakes, at no cost now)."""
        self._start_timer()
        changed = self._timer_changed
        if changed is not None and (deadline is None or deadline < self._timer_wakes_at):
            changed.set()

    def _start_timer(self) -> None:
        """Run :meth:`run_timer` in a task of the host's group, if it is not running
        yet and the host is attached (then ``attach`` starts it if a deadline is
        already set); a no-op where the timer is someone else's."""
        if self.runs_timer and self._timer is None and self._group is not None:
            self._timer = self._group.start_cancellable(self.run_timer)

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
            if not self.output.send_now():
                await self.output.flush()

    # Requests -------------------------------------------------------------------------

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        related_request: RequestId | None = None,
        owner: object = None,
    ) -> dict[str, Any]:
        """Send a request and wait for its result (raises :class:`MCPError`);
        ``owner`` says whose it is (:meth:`Driver.owner_of`)."""
        if self.driver.closed:
            raise ConnectionClosedError(message="the connection is closed")
        done = self.new_signal()
        waiter = Waiter(done.set, on_progress, owner)
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
            if not self.output.send_now():
                await self.output.flush()
            await done.wait()
        except BaseException:
            if not waiter.done:
                # The caller gave up (cancelled): cancel on the wire too.
                self.driver.abandon(request_id)
                if not self.output.send_now():
                    await self.shielded(self.output.flush)
            raise
        return waiter.outcome()

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        self.session.send_notification(method, params)
        await self.output.flush()

    # Handler tasks --------------------------------------------------------------------

    def _spawn_handler(
        self, request_id: RequestId | None, fn: Callable[[], Awaitable[None]]
    ) -> None:
        group = self._group
        assert group is not None, "attach() the host to a task group first"
        if request_id is None:
            group.start_soon(fn)
            return

        def forget() -> None:
            if self._handlers.get(request_id) is handle:
                del self._handlers[request_id]

        handle = group.start_cancellable(fn, forget)
        self._handlers[request_id] = handle

    def _cancel_handler(self, request_id: RequestId) -> None:
        handle = self._handlers.get(request_id)
        if handle is not None:
            handle.cancel()

    def cancel_handlers(self) -> None:
        """Cancel every handler task still running."""
        if not self._handlers:
            return
        for handle in list(self._handlers.values()):
            handle.cancel()


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


@asynccontextmanager
async def hosted(
    host: HostBase, run: Callable[[], Awaitable[Any]] | None = None
) -> AsyncIterator[TaskGroup]:
    """The block in which ``host``'s tasks run (and ``run``, its reader, if given):
    a task group of its backend, its tasks cancelled on leaving."""
    async with host.backend.open_task_group() as group:
        host.attach(group)
        if run is not None:
            group.start_soon(run)
        try:
            yield group
        finally:
            group.cancel()
