"""Trio drivers for a sans-IO session: :class:`TrioSessionHost` (requests,
handler tasks, timers; any transport) and :class:`TrioRunner` (a session over
one byte stream pair: stdio, TCP, memory)."""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import trio

from sansio_mcp import RequestId, Session
from sansio_mcp._driver import InputHandler, NotificationHandler, RequestHandler
from sansio_mcp._host import HostBase, Signal

__all__ = ["TrioRunner", "TrioSessionHost"]

logger = logging.getLogger("trio_adapters")

_READ_SIZE = 65536


class TrioSessionHost(HostBase):
    """What every Trio transport needs around a session: concurrent handler
    tasks (cancellable one by one), awaitable requests, and the timer.

    Subclasses say how queued output leaves (:meth:`flush`).
    """

    def __init__(
        self,
        session: Session,
        *,
        handle_request: RequestHandler,
        handle_notification: NotificationHandler | None = None,
        answer_input: InputHandler | None = None,
    ) -> None:
        super().__init__(
            session,
            handle_request=handle_request,
            handle_notification=handle_notification,
            answer_input=answer_input,
            spawn=self._spawn,
            cancel=self._cancel_handler,
        )
        self._nursery: trio.Nursery | None = None
        self._scopes: dict[RequestId, trio.CancelScope] = {}
        self._timer_changed = trio.Event()
        self._timer_scope = trio.CancelScope()
        self._flush_wanted = trio.Event()
        self._flush_scope = trio.CancelScope()
        self.driver.on_output = self._schedule_flush

    # Primitives for HostBase --------------------------------------------------------

    def new_signal(self) -> Signal:
        return trio.Event()

    def now(self) -> float:
        return trio.current_time()

    async def shielded(self, step: Callable[[], Awaitable[None]]) -> None:
        with trio.CancelScope(shield=True):
            await step()

    def rearm_timer(self) -> None:
        self._timer_changed.set()

    # Tasks --------------------------------------------------------------------------

    def attach(self, nursery: trio.Nursery) -> None:
        """Run handler tasks (and the timer) in ``nursery``."""
        self._nursery = nursery
        nursery.start_soon(self._timer_loop)
        nursery.start_soon(self._flush_loop)

    async def _timer_loop(self) -> None:
        with self._timer_scope:
            while True:
                deadline = self.session.next_deadline()
                with trio.move_on_at(deadline if deadline is not None else math.inf):
                    await self._timer_changed.wait()
                    self._timer_changed = trio.Event()
                    continue
                self.session.handle_timer(trio.current_time())
                self.driver.process_events()
                await self.flush()

    def _schedule_flush(self) -> None:
        self._flush_wanted.set()

    async def _flush_loop(self) -> None:
        # One long-lived task sends what handlers queue: spawning a task per
        # output cost about a fifth of a stdio server's time per request.
        with self._flush_scope:
            while True:
                await self._flush_wanted.wait()
                self._flush_wanted = trio.Event()
                await self.flush()

    def _spawn(self, request_id: RequestId | None, fn: Callable[[], Awaitable[None]]) -> None:
        assert self._nursery is not None, "attach() the host to a nursery first"
        if request_id is None:
            self._nursery.start_soon(fn)
            return
        scope = trio.CancelScope()
        self._scopes[request_id] = scope

        async def run() -> None:
            try:
                with scope:
                    await fn()
            finally:
                self._scopes.pop(request_id, None)

        self._nursery.start_soon(run)

    def _cancel_handler(self, request_id: RequestId) -> None:
        scope = self._scopes.get(request_id)
        if scope is not None:
            scope.cancel()

    def cancel_all_handlers(self) -> None:
        """The host is done (its HTTP exchange is over): cancel its handlers, its timer
        and its flusher."""
        for scope in list(self._scopes.values()):
            scope.cancel()
        # Otherwise every finished stateless request would leave those tasks parked.
        self._timer_scope.cancel()
        self._flush_scope.cancel()


class Framing(Protocol):
    """Turns bytes into session input and session output into bytes."""

    def receive_data(self, data: bytes | bytearray) -> None: ...

    def data_to_send(self) -> bytes: ...


class TrioRunner(TrioSessionHost):
    """Runs one session over ``receive_stream`` / ``send_stream``.

    ``await runner.run()`` reads until end of input (start it in a nursery);
    ``await runner.request(...)`` sends a request and waits for its result.
    Handlers for the peer's requests run concurrently in the runner's nursery.
    """

    def __init__(
        self,
        session: Session,
        send_stream: trio.abc.SendStream,
        receive_stream: trio.abc.ReceiveStream,
        *,
        handle_request: RequestHandler,
        handle_notification: NotificationHandler | None = None,
        answer_input: InputHandler | None = None,
        framing: Framing | None = None,
    ) -> None:
        super().__init__(
            session,
            handle_request=handle_request,
            handle_notification=handle_notification,
            answer_input=answer_input,
        )
        self._send_stream = send_stream
        self._receive_stream = receive_stream
        #: Bytes <-> messages: the session itself (NDJSON) unless told otherwise.
        self.framing: Framing = framing or session
        self._send_lock = trio.Lock()
        self._closed = trio.Event()

    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Read and dispatch until the peer closes its side."""
        async with trio.open_nursery() as nursery:
            self.attach(nursery)
            task_status.started()
            try:
                await self._read_loop()
            finally:
                self._finish()
                nursery.cancel_scope.cancel()

    async def _read_loop(self) -> None:
        while not self.driver.closed:
            try:
                data = await self._receive_stream.receive_some(_READ_SIZE)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                data = b""
            self.framing.receive_data(data)
            self.driver.process_events()
            await self.flush()
            if not data:
                break

    def _finish(self) -> None:
        self.session.close()
        self.driver.process_events()
        self._closed.set()

    async def flush(self) -> None:
        async with self._send_lock:
            data = self.framing.data_to_send()
            if not data:
                return
            try:
                await self._send_stream.send_all(data)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                logger.debug("peer gone; dropped %d bytes", len(data))
                self.session.close()
                self.driver.process_events()

    async def wait_closed(self) -> None:
        await self._closed.wait()
