"""asyncio drivers for a sans-IO session: :class:`AsyncioSessionHost` (the
runtime's host on asyncio; any transport) and :class:`AsyncioRunner` (a session
over one reader/writer pair)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Unpack

from sansio_mcp import Session
from sansio_mcp.runtime import Backend, HostBase, HostHandlers
from sansio_mcp.runtime.hosting import Framing

from ._backend import (
    PRIMITIVES,
    OutputPipeProtocol,
    read_in_small_chunks,
    shielded,
)

__all__ = [
    "AsyncioRunner",
    "AsyncioSessionHost",
    "Connector",
    "Framing",
    "OutputPipeProtocol",
    "PushProtocol",
    "TransportOutput",
    "shielded",
]

logger = logging.getLogger("asyncio_adapters")

_READ_SIZE = 65536


class AsyncioSessionHost(HostBase):
    """The runtime's session host on asyncio (``attach`` it to a backend task group)."""

    backend: Backend = PRIMITIVES


#: Connects a transport to the protocol the factory makes (``loop.connect_read_pipe``).
Connector = Callable[
    [Callable[[], asyncio.BaseProtocol]], Awaitable[tuple[asyncio.BaseTransport, Any]]
]


class TransportOutput:
    """Output written into an asyncio transport: writing never blocks (only waiting
    for it to drain does), so output goes out at once, in order, whoever else is
    draining; what the transport holds it sends without anyone waiting, so there is
    no flusher task.  ``on_gone(dropped)`` is called once the transport has closed
    (the peer stopped reading: EPIPE)."""

    flusher = None

    def __init__(
        self, framing: Framing, writer: asyncio.StreamWriter, on_gone: Callable[[int], None]
    ) -> None:
        #: Takes the queued output (a session's own, bound once: see ``data_source``).
        self._take = framing.data_source() if isinstance(framing, Session) else framing.data_to_send
        self._writer = writer
        # The transport itself: the writer's methods only pass these calls on to it.
        self._transport = writer.transport
        self._on_gone = on_gone
        self._drain_lock = asyncio.Lock()

    def schedule(self) -> None:
        self.send_now()

    def send_now(self) -> bool:
        transport = self._transport
        data = self._take()
        if data and not transport.is_closing():
            transport.write(data)  # on EPIPE the transport closes itself at once
        if transport.is_closing():
            self._on_gone(len(data))
        return True

    async def flush(self) -> None:
        """Write what is queued, then wait while the transport holds too much of it."""
        self.send_now()
        writer = self._writer
        if not self._transport.get_write_buffer_size() or self._transport.is_closing():
            return
        async with self._drain_lock:
            try:
                await writer.drain()
            except (ConnectionError, OSError):
                self._on_gone(writer.transport.get_write_buffer_size())


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
        self.framing: Framing = framing or session
        self.transport_output = TransportOutput(self.framing, writer, self._output_gone)
        super().__init__(session, output=self.transport_output, **handlers)
        self._reader = reader
        self._writer = writer
        read_in_small_chunks(writer.transport)  # a socket reads and writes on one transport
        protocol = writer.transport.get_protocol()
        if isinstance(protocol, OutputPipeProtocol):
            protocol.on_lost = lambda: self._output_gone(writer.transport.get_write_buffer_size())
        self.started = asyncio.Event()
        self._input_ended = asyncio.Event()
        #: ``_input_ended`` is set (read per message: a plain attribute is cheaper).
        self._fed_all = False
        self._waits_for_output = self.reading_waits_for_output  # the session's role: fixed
        self._writer_transport = writer.transport
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
        async with self.backend.open_task_group() as group:
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
                group.cancel()

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
        output = self.transport_output
        while not self.driver.closed:
            try:
                data = await self._reader.read(_READ_SIZE)
            except (ConnectionError, OSError):
                data = b""
            self.framing.receive_data(data)
            self.driver.process_events()
            if self._waits_for_output:
                await output.flush()
            else:
                output.send_now()
            if not data:
                break
        self._end_input()

    def _end_input(self) -> None:
        self._fed_all = True
        self._input_ended.set()

    def feed(self, data: bytes) -> None:
        """Input pushed by a protocol (``b""``: its end)."""
        if self._fed_all:
            return
        self.framing.receive_data(data)
        self.driver.process_events()
        self.transport_output.send_now()
        if not data or self.driver.closed:
            self._end_input()
        elif self._waits_for_output and self._writer_transport.get_write_buffer_size():
            # The peer is not keeping up with what we send: read no more until
            # it has (as the read loop does by awaiting its flush).
            self.pause_input()
            self.spawn_task(self._drain_then_resume)

    async def _drain_then_resume(self) -> None:
        try:
            await self.flush()
        finally:
            self.resume_input()

    def _output_gone(self, dropped: int) -> None:
        """The output transport closed (the peer stopped reading: EPIPE): the
        session is over, as when its input ends."""
        if not self.driver.closed:
            logger.debug("peer gone; dropped %d bytes", dropped)
            self.session.close()
            self.driver.process_events()
        self._end_input()


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
