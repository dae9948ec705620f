"""Trio drivers for a sans-IO session: :class:`TrioSessionHost` (requests,
handler tasks, timers; any transport) and :class:`TrioRunner` (a session over
one byte stream pair: stdio, TCP, memory)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, Unpack

import trio

from sansio_mcp import Session
from sansio_mcp.runtime._backend import Backend, Cancellable, Signal
from sansio_mcp.runtime._driver import (
    HostHandlers,
    InputHandler,
    NotificationHandler,
    RequestHandler,
)
from sansio_mcp.runtime._host import HostBase
from sansio_mcp.runtime._sender import Sender

from ._backend import PRIMITIVES, OneWaiterSignal, PipeStream, as_pipe, fileno_of, is_fifo, reader

__all__ = ["PipeOutput", "TrioRunner", "TrioSessionHost", "reader"]

logger = logging.getLogger("trio_adapters")

_READ_SIZE = 65536


#: Seconds a shielded step (cleanup while being cancelled) may take at the most.
SHIELDED_GRACE = 2.0


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
        )
        self._nursery: trio.Nursery | None = None
        self._timer_scope = trio.CancelScope()
        self._flush_wanted = trio.Event()
        self._flush_scope = trio.CancelScope()
        self._timer_started = False
        self.driver.on_output = self._schedule_flush

    #: The event-loop primitives the runtime's loops on this host await.
    backend: Backend = PRIMITIVES

    # Primitives for HostBase --------------------------------------------------------

    def new_signal(self) -> Signal:
        return OneWaiterSignal()

    def now(self) -> float:
        return trio.current_time()

    async def shielded(self, step: Callable[[], Awaitable[None]]) -> None:
        # Bounded: a step that waits for this host's own tasks (a flush waits for the
        # flusher) would wait forever once the cancellation has ended them too.
        with trio.CancelScope(shield=True), trio.move_on_after(SHIELDED_GRACE):
            await step()

    # Tasks --------------------------------------------------------------------------

    #: Whether this host enforces its session's deadlines (False where the session
    #: belongs to something that does, as the bridge host does for its servers').
    runs_timer = True
    #: Whether queued output waits for the flusher task (False where a subclass
    #: sends it at once, as an HTTP server's host routes it to exchanges).
    flushes_in_task = True

    def attach(self, nursery: trio.Nursery) -> None:
        """Run handler tasks (and the timer) in ``nursery``."""
        self._nursery = nursery
        if not self.timer_on_demand or self.session.next_deadline() is not None:
            self._start_timer()
        if self.flushes_in_task:
            nursery.start_soon(self._flush_loop)

    def _start_timer(self) -> None:
        if self.runs_timer and not self._timer_started and self._nursery is not None:
            self._timer_started = True
            self._nursery.start_soon(self._timer_loop)

    def spawn_task(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        """Run ``fn(*args)`` in a task of the host's nursery."""
        assert self._nursery is not None, "attach() the host to a nursery first"
        self._nursery.start_soon(fn, *args)

    def start_cancellable(
        self, fn: Callable[[], Awaitable[Any]], on_done: Callable[[], None] | None = None
    ) -> Cancellable:
        """Run ``fn()`` in a task of the host's nursery; cancelling the scope ends it."""
        scope = trio.CancelScope()

        async def run() -> None:
            try:
                with scope:
                    await fn()
            finally:
                if on_done is not None:
                    on_done()

        self.spawn_task(run)
        return scope

    async def _timer_loop(self) -> None:
        with self._timer_scope:  # cancel_all_handlers ends it
            await self.run_timer()

    def _schedule_flush(self) -> None:
        self._flush_wanted.set()

    async def _flush_loop(self) -> None:
        # One long-lived task sends what handlers queue: spawning a task per
        # output cost about a fifth of a stdio server's time per request.
        with self._flush_scope:
            while True:
                await self._flush_wanted.wait()
                self._flush_wanted = trio.Event()
                await self._flush_step()

    async def _flush_step(self) -> None:
        """What the flusher does when woken (a host sending through a
        :class:`PipeOutput` sends its backlog)."""
        await self.flush()

    def cancel_all_handlers(self) -> None:
        """The host is done (its HTTP exchange is over): cancel its handlers, its timer
        and its flusher."""
        self.cancel_handlers()
        # Otherwise every finished stateless request would leave those tasks parked.
        self._timer_scope.cancel()
        self._flush_scope.cancel()


class Output(Protocol):
    """Hands over the bytes queued to be sent."""

    def data_to_send(self) -> bytes: ...


class Framing(Output, Protocol):
    """Turns bytes into session input and session output into bytes."""

    def receive_data(self, data: bytes | bytearray) -> None: ...


class PipeOutput:
    """Output by the one-sender rule of the runtime's :class:`Sender`: only the host's
    flusher task waits to send, so a task that is cancelled (a handler, a request
    that timed out) never leaves half a message on the wire.  Uncontended output to
    a pipe is written at once, without yielding (FdStream.send_all would first give
    the scheduler a turn, delaying every message by a pass); what the pipe does not
    take at once the flusher sends, and :meth:`flush` waits until it has gone out.
    Once the peer stops reading, :meth:`_peer_gone` says what that means."""

    framing: Output
    _flush_scope: trio.CancelScope

    def _init_output(self, send_stream: trio.abc.SendStream) -> None:
        #: ``send_stream`` if it is a pipe (see :func:`as_pipe`), else None.
        self._send_pipe = as_pipe(send_stream)
        self._sender = Sender(PRIMITIVES, PipeStream(send_stream), self._peer_gone)

    def _schedule_flush(self) -> None:
        self._send_soon()

    def _send_soon(self) -> None:
        """Send what is queued without waiting: now what the pipe takes, the rest
        from the flusher task."""
        data = self.framing.data_to_send()
        if data:
            self._sender.write(data)

    def send_now(self) -> bool:
        self._send_soon()
        return True  # the flusher sends whatever the pipe did not take

    async def flush(self) -> None:
        """Send what the session queued, and wait until all output has gone out
        (cancelling the wait loses nothing: the flusher goes on sending)."""
        self._send_soon()
        await self._sender.flushed()

    async def _flush_loop(self) -> None:
        with self._flush_scope:
            await self._sender.run()

    def _peer_gone(self) -> None:
        raise NotImplementedError


class TrioRunner(PipeOutput, TrioSessionHost):
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
        framing: Framing | None = None,
        **handlers: Unpack[HostHandlers],
    ) -> None:
        super().__init__(session, **handlers)
        self._init_output(send_stream)
        self._receive_stream = receive_stream
        #: Bytes <-> messages: the session itself (NDJSON) unless told otherwise.
        self.framing: Framing = framing or session
        self._closed = trio.Event()

    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Read and dispatch until the peer closes its side."""
        async with trio.open_nursery() as nursery:
            self.attach(nursery)
            if is_fifo(self._send_pipe):
                nursery.start_soon(self._watch_output)
            task_status.started()
            try:
                await self._read_loop()
            finally:
                self._finish()
                nursery.cancel_scope.cancel()

    async def _read_loop(self) -> None:
        read = reader(self._receive_stream)
        waits_for_output = self.reading_waits_for_output  # the session's role: fixed
        while not self.driver.closed:
            try:
                data = await read()
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                data = b""
            self.framing.receive_data(data)
            self.driver.process_events()
            if waits_for_output:
                await self.flush()
            else:
                self._send_soon()
            if not data:
                break

    async def _watch_output(self) -> None:
        # A pipe's write end reports an error (it turns "readable") once its reader
        # closes it: the peer is gone even while nothing is being written.
        try:
            await trio.lowlevel.wait_readable(fileno_of(self._send_pipe))
        except (trio.ClosedResourceError, OSError):
            return  # we closed it
        self._peer_gone()

    def _finish(self) -> None:
        self.session.close()
        self.driver.process_events()
        self._closed.set()

    def _peer_gone(self) -> None:
        self.session.close()
        self.driver.process_events()

    async def wait_closed(self) -> None:
        await self._closed.wait()
