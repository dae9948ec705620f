"""Trio drivers for a sans-IO session: :class:`TrioSessionHost` (the runtime's
host on Trio; any transport) and :class:`TrioRunner` (a session over one byte
stream pair: stdio, TCP, memory)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, Unpack

import trio

from sansio_mcp import Session
from sansio_mcp.runtime import Backend, HostBase, HostHandlers, Sender
from sansio_mcp.runtime.hosting import Framing

from ._backend import (
    _READ_SIZE,
    PRIMITIVES,
    NurseryGroup,
    PipeReader,
    PipeStream,
    as_pipe,
    fileno_of,
    is_fifo,
    readable_waiter,
    reader,
)

__all__ = ["PipeOutput", "TrioRunner", "TrioSessionHost", "reader"]


class TrioSessionHost(HostBase):
    """The runtime's session host on Trio (``attach`` it to a :class:`NurseryGroup`)."""

    backend: Backend = PRIMITIVES


class PipeOutput:
    """Output to one stream by the one-sender rule of the runtime's :class:`Sender`:
    only the host's flusher task waits to send, so a task that is cancelled (a
    handler, a request that timed out) never leaves half a message on the wire.
    Uncontended output to a pipe is written at once, without yielding
    (FdStream.send_all would first give the scheduler a turn, delaying every
    message by a pass); what the pipe does not take at once the flusher sends, and
    :meth:`flush` waits until it has gone out.  ``on_gone`` is called once the
    peer stops reading."""

    def __init__(
        self, framing: Framing, send_stream: trio.abc.SendStream, on_gone: Callable[[], None]
    ) -> None:
        #: Takes the queued output (a session's own, bound once: see ``data_source``).
        self._take = framing.data_source() if isinstance(framing, Session) else framing.data_to_send
        #: ``send_stream`` if it is a pipe (see :func:`as_pipe`), else None.
        self.pipe = as_pipe(send_stream)
        self._sender = Sender(PRIMITIVES, PipeStream(send_stream), on_gone)
        self.flusher = self._sender.run

    def schedule(self) -> None:
        """Send what is queued without waiting: now what the pipe takes, the rest
        from the flusher task."""
        data = self._take()
        if data:
            self._sender.write(data)

    def send_now(self) -> bool:
        self.schedule()
        return True  # the flusher sends whatever the pipe did not take

    async def flush(self) -> None:
        """Send what the session queued, and wait until all output has gone out
        (cancelling the wait loses nothing: the flusher goes on sending)."""
        self.schedule()
        await self._sender.flushed()


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
        framing: Framing | None = None,
        **handlers: Unpack[HostHandlers],
    ) -> None:
        #: Bytes <-> messages: the session itself (NDJSON) unless told otherwise.
        self.framing: Framing = framing or session
        self.pipe_output = PipeOutput(self.framing, send_stream, self._peer_gone)
        super().__init__(session, output=self.pipe_output, **handlers)
        self._receive_stream = receive_stream
        self._closed = trio.Event()

    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Read and dispatch until the peer closes its side."""
        async with trio.open_nursery() as nursery:
            self.attach(NurseryGroup(nursery))
            if is_fifo(self.pipe_output.pipe):
                nursery.start_soon(self._watch_output)
            # The reader is a task of its own, not this one: every message wakes it,
            # and a wake resumes each coroutine frame on the task's stack, which here
            # would be all of our callers' (the serve functions, the CLI's).
            nursery.start_soon(self._read_loop, nursery.cancel_scope)
            task_status.started()

    async def _read_loop(self, scope: trio.CancelScope) -> None:
        """Read and dispatch until the peer closes its side; then end the session
        and ``scope`` (the runner's tasks), however the reading ended."""
        try:
            pipe = PipeReader(self._receive_stream)
            read = reader(self._receive_stream) if pipe.holder is None else None
            output = self.pipe_output
            waits_for_output = self.reading_waits_for_output  # the session's role: fixed
            driver, receive = self.driver, self.framing.receive_data
            take, sender = output._take, output._sender
            wait_readable, checkpoint = readable_waiter(), trio.lowlevel.checkpoint
            while not driver.closed:
                try:
                    if read is None:
                        # PipeReader.read, inline: a coroutine and two calls fewer per
                        # message.  A pipe closed, or failing, ends the input (b""), as
                        # read()'s errors do below.
                        holder = pipe.holder
                        if pipe.wait_first:
                            fd = holder.fd
                            if fd < 0:  # closed: the number may belong to another file
                                raise trio.ClosedResourceError("the pipe is closed")
                            await wait_readable(fd)
                        else:
                            await checkpoint()
                        fd = holder.fd  # again: it may have closed while we waited
                        if fd < 0:
                            raise trio.ClosedResourceError("the pipe is closed")
                        try:
                            data: bytes | bytearray = os.read(fd, _READ_SIZE)
                        except BlockingIOError:
                            data = await pipe.read()  # nothing after all: wait as read() does
                        except OSError:
                            data = b""
                        else:
                            pipe.wait_first = len(data) < _READ_SIZE
                    else:
                        data = await read()
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    data = b""
                receive(data)
                driver.process_events()
                if waits_for_output:
                    # The output's schedule, inline; written at once when the pipe takes
                    # it all (write says so): nothing to wait for.
                    out = take()
                    if not (sender.write(out) if out else sender.idle):
                        await output.flush()
                else:
                    output.schedule()
                if not data:
                    break
        finally:
            self._finish()
            scope.cancel()

    async def _watch_output(self) -> None:
        # A pipe's write end reports an error (it turns "readable") once its reader
        # closes it: the peer is gone even while nothing is being written.
        try:
            await trio.lowlevel.wait_readable(fileno_of(self.pipe_output.pipe))
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
