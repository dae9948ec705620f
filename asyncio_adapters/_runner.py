"""asyncio drivers for a sans-IO session: :class:`AsyncioSessionHost`
(requests, handler tasks, timers; any transport) and :class:`AsyncioRunner`
(a session over one reader/writer pair)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Protocol, Unpack

from sansio_mcp import Session
from sansio_mcp.runtime._backend import Backend, Cancellable, Signal
from sansio_mcp.runtime._driver import (
    HostHandlers,
    InputHandler,
    NotificationHandler,
    RequestHandler,
)
from sansio_mcp.runtime._host import HostBase

from ._backend import (
    PRIMITIVES,
    OneWaiterSignal,
    OutputPipeProtocol,
    read_in_small_chunks,
    shielded,
)

__all__ = [
    "AsyncioRunner",
    "AsyncioSessionHost",
    "Connector",
    "Framing",
    "PushProtocol",
    "OutputPipeProtocol",
    "shielded",
]

logger = logging.getLogger("asyncio_adapters")

_READ_SIZE = 65536


class AsyncioSessionHost(HostBase):
    """What every asyncio transport needs around a session: concurrent
    handler tasks (cancellable one by one), awaitable requests, and the timer.
    Tasks live in the :class:`asyncio.TaskGroup` given to :meth:`attach`.
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
        self._group: asyncio.TaskGroup | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._timer_task: asyncio.Task[Any] | None = None
        self.driver.on_output = self._schedule_flush

    #: The event-loop primitives the runtime's loops on this host await.
    backend: Backend = PRIMITIVES

    # Primitives for HostBase --------------------------------------------------------

    def new_signal(self) -> Signal:
        return OneWaiterSignal()

    def now(self) -> float:
        return asyncio.get_running_loop().time()

    async def shielded(self, step: Callable[[], Awaitable[None]]) -> None:
        await shielded(step)

    # Tasks --------------------------------------------------------------------------

    #: Whether this host enforces its session's deadlines (False where the session
    #: belongs to something that does, as the bridge host does for its servers').
    runs_timer = True

    def attach(self, group: asyncio.TaskGroup) -> None:
        """Run handler tasks (and the timer) in ``group``."""
        self._group = group
        if not self.timer_on_demand or self.session.next_deadline() is not None:
            self._start_timer()

    def _start_timer(self) -> None:
        if self.runs_timer and self._timer_task is None and self._group is not None:
            self._timer_task = self.start(self.run_timer())

    def start(self, coroutine: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """A task in the host's group, cancelled by :meth:`stop`."""
        assert self._group is not None, "attach() the host to a task group first"
        task = self._group.create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def spawn_task(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        """Run ``fn(*args)`` in a task of the host's group."""

        async def run() -> None:
            await fn(*args)

        self.start(run())

    def start_cancellable(
        self, fn: Callable[[], Awaitable[Any]], on_done: Callable[[], None] | None = None
    ) -> Cancellable:
        """Run ``fn()`` in a task of the host's group; cancelling the task ends it."""

        async def run() -> None:
            await fn()

        task = self.start(run())
        if on_done is not None:
            task.add_done_callback(lambda _: on_done())
        return task

    def stop(self) -> None:
        """Cancel every task of this host (the group then finishes)."""
        for task in list(self._tasks):
            task.cancel()

    def _schedule_flush(self) -> None:
        # What cannot go out at once goes from a task that awaits flush().
        if self._group is not None and not self.send_now():
            self.start(self.flush())

    def cancel_all_handlers(self) -> None:
        """The host is done (its HTTP exchange is over): cancel its handlers and its timer."""
        self.cancel_handlers()
        # Otherwise every finished stateless request would leave its timer task parked.
        if self._timer_task is not None:
            self._timer_task.cancel()


#: Connects a transport to the protocol the factory makes (``loop.connect_read_pipe``).
Connector = Callable[
    [Callable[[], asyncio.BaseProtocol]], Awaitable[tuple[asyncio.BaseTransport, Any]]
]


class Framing(Protocol):
    """Turns bytes into session input and session output into bytes."""

    def receive_data(self, data: bytes | bytearray) -> None: ...

    def data_to_send(self) -> bytes: ...


class AsyncioRunner(AsyncioSessionHost):
    """Runs one session over a byte stream.

    Input is either read from an :class:`asyncio.StreamReader` by :meth:`run`,
    or, with ``reader=None``, pushed by an asyncio protocol (a
    :class:`PushProtocol` calling :meth:`feed`), which saves a task wake-up
    per message; :meth:`run` then lasts until the input ends.  Output goes
    to ``writer``.  Handlers for the peer's requests run concurrently.
    """

    def __init__(
        self,
        session: Session,
        reader: asyncio.StreamReader | None,
        writer: asyncio.StreamWriter,
        *,
        framing: Framing | None = None,
        **handlers: Unpack[HostHandlers],
    ) -> None:
        super().__init__(session, **handlers)
        self._reader = reader
        self._writer = writer
        read_in_small_chunks(writer.transport)  # a socket reads and writes on one transport
        protocol = writer.transport.get_protocol()
        if isinstance(protocol, OutputPipeProtocol):
            protocol.on_lost = lambda: self._output_gone(writer.transport.get_write_buffer_size())
        self._send_lock = asyncio.Lock()
        self.framing: Framing = framing or session
        self.started = asyncio.Event()
        self._input_ended = asyncio.Event()
        #: Whether the session ended because the peer's input ended (or its output
        #: went away), rather than by cancellation: set when :meth:`run` finishes.
        self.ended_by_peer = False
        #: Set by a PushProtocol: stops and restarts its transport's reading.
        self.pause_input: Callable[[], None] = lambda: None
        self.resume_input: Callable[[], None] = lambda: None

    async def run(self, *, connect_input: Connector | None = None) -> None:
        """Read and dispatch until the peer closes its side.

        Without a reader, ``connect_input`` connects the transport whose input
        is pushed to this runner (see :meth:`pump`).
        """
        async with asyncio.TaskGroup() as group:
            self.attach(group)
            self.started.set()
            try:
                if self._reader is not None:
                    await self._read_loop()
                elif connect_input is not None:
                    await self.pump(connect_input)
                else:
                    await self._input_ended.wait()
            finally:
                # Read before the teardown below, which may end the input itself.
                self.ended_by_peer = self._input_ended.is_set()
                self.session.close()
                self.driver.process_events()
                self.stop()

    async def pump(self, connect: Connector) -> None:
        """Connect a transport (``connect(protocol_factory)``, e.g. a partial of
        ``loop.connect_read_pipe``) whose input a :class:`PushProtocol` hands to
        this runner; return when that input ends, closing the transport."""
        transport, _ = await connect(lambda: PushProtocol(self))
        try:
            await self._input_ended.wait()
        finally:
            transport.close()

    async def _read_loop(self) -> None:
        assert self._reader is not None
        while not self.driver.closed:
            try:
                data = await self._reader.read(_READ_SIZE)
            except (ConnectionError, OSError):
                data = b""
            self.framing.receive_data(data)
            self.driver.process_events()
            if self.reading_waits_for_output:
                await self.flush()
            else:
                self.send_now()
            if not data:
                break
        self._input_ended.set()

    def feed(self, data: bytes) -> None:
        """Input pushed by a protocol (``b""``: its end)."""
        if self._input_ended.is_set():
            return
        self.framing.receive_data(data)
        self.driver.process_events()
        self.send_now()
        if not data or self.driver.closed:
            self._input_ended.set()
        elif self.reading_waits_for_output and self._writer.transport.get_write_buffer_size():
            # The peer is not keeping up with what we send: read no more until
            # it has (as the read loop does by awaiting its flush).
            self.pause_input()
            self.start(self._drain_then_resume())

    async def _drain_then_resume(self) -> None:
        try:
            await self.flush()
        finally:
            self.resume_input()

    def send_now(self) -> bool:
        # Writing to a transport never blocks (only waiting for it to drain
        # does), so output goes out at once, in order, whoever else is draining;
        # what the transport holds it sends without anyone waiting.
        writer = self._writer
        data = self.framing.data_to_send()
        if data and not writer.is_closing():
            writer.write(data)  # on EPIPE the transport closes itself at once
        if writer.is_closing():
            self._output_gone(len(data))
        return True

    def _output_gone(self, dropped: int) -> None:
        """The output transport closed (the peer stopped reading: EPIPE): the
        session is over, as when its input ends."""
        if not self.driver.closed:
            logger.debug("peer gone; dropped %d bytes", dropped)
            self.session.close()
            self.driver.process_events()
        self._input_ended.set()

    async def flush(self) -> None:
        """Write what is queued, then wait while the transport holds too much of it."""
        self.send_now()
        if not self._writer.transport.get_write_buffer_size() or self._writer.is_closing():
            return
        async with self._send_lock:
            try:
                await self._writer.drain()
            except (ConnectionError, OSError):
                self._output_gone(self._writer.transport.get_write_buffer_size())


class PushProtocol(asyncio.Protocol):
    """Hands what a transport reads straight to an :class:`AsyncioRunner`."""

    def __init__(self, runner: AsyncioRunner) -> None:
        self._runner = runner

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.ReadTransport)
        read_in_small_chunks(transport)

        def resume() -> None:
            if not transport.is_closing():
                transport.resume_reading()

        self._runner.pause_input = transport.pause_reading
        self._runner.resume_input = resume

    def data_received(self, data: bytes) -> None:
        self._runner.feed(data)

    def eof_received(self) -> bool | None:
        self._runner.feed(b"")
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self._runner.feed(b"")
