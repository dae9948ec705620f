"""The asyncio :class:`~sansio_mcp.runtime.Backend`: the runtime's primitives
on asyncio, plus this adapter's transports (what ``--backend asyncio`` runs on)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import socket
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from sansio_mcp.runtime import OnBound, Signal, TaskGroup, TimedOut
from sansio_mcp.runtime.hosting import ChildProcess, ConnectionHandler

__all__ = [
    "PRIMITIVES",
    "AsyncioBackend",
    "Child",
    "OneWaiterSignal",
    "OutputPipeProtocol",
    "PipeStream",
    "TCPStream",
    "read_in_small_chunks",
    "serve_tcp",
    "shielded",
    "start_child",
]

T = TypeVar("T")

logger = logging.getLogger("asyncio_adapters.http")


_READ_SIZE = 65536


def read_in_small_chunks(transport: asyncio.BaseTransport) -> None:
    """Make ``transport`` read at most 64 KiB at a time.

    asyncio's own transports read up to 256 KiB per call, and allocating that
    buffer for every small message costs more than the message (about 7 us a
    read here, against half a microsecond for 64 KiB).
    """
    if isinstance(getattr(transport, "max_size", None), int):
        transport.max_size = _READ_SIZE  # type: ignore[attr-defined]


class OneWaiterSignal:
    """HostBase's one-shot signal for one waiting task: a bare future, without
    :class:`asyncio.Event`'s lock and list (one is made for every request)."""

    __slots__ = ("_is_set", "_waiter")

    def __init__(self) -> None:
        self._is_set = False
        self._waiter: asyncio.Future[None] | None = None

    def set(self) -> None:
        self._is_set = True
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def wait(self) -> bool:
        if not self._is_set:
            assert self._waiter is None, "one task at a time waits on a signal"
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        return True


class _TaskGroup:
    """An :class:`asyncio.TaskGroup` as a :class:`~sansio_mcp.runtime.TaskGroup`;
    ``cancel`` cancels its tasks and the task running its ``async with``."""

    def __init__(self, group: asyncio.TaskGroup, owner: asyncio.Task[Any] | None) -> None:
        self._group = group
        self._owner = owner
        self._tasks: set[asyncio.Task[Any]] = set()
        self.cancelled = False
        #: ``cancel`` cancelled the owner task: that cancellation ends the block.
        self.owner_cancelled = False

    def start_soon(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        async def call() -> None:
            await fn(*args)

        task = self._group.create_task(call())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def start_cancellable(
        self, fn: Callable[[], Awaitable[Any]], on_done: Callable[[], None] | None = None
    ) -> asyncio.Task[Any]:
        async def call() -> None:
            await fn()

        task = self._group.create_task(call())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        if on_done is not None:
            task.add_done_callback(lambda _: on_done())
        return task

    def cancel(self) -> None:
        self.cancelled = True
        for task in list(self._tasks):
            task.cancel()
        if self._owner is not None and not self.owner_cancelled:
            self.owner_cancelled = True
            self._owner.cancel()


_QUICKACK: int | None = getattr(socket, "TCP_QUICKACK", None)


class TCPStream:
    """An asyncio TCP (or TLS) connection as a :class:`~sansio_mcp.runtime.ByteStream`.
    With ``client`` (every stream :meth:`AsyncioBackend.open_tcp_stream` opens), each
    read that got bytes re-arms TCP_QUICKACK, so that no client leg (MCP, A2A, OAuth,
    ...) can forget it and stall 40 ms per answer on a delayed ACK."""

    __slots__ = ("_client", "_reader", "_writer")

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, client: bool = False
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._client = client and _QUICKACK is not None

    async def send_all(self, data: bytes) -> None:
        self._writer.write(data)
        await self._writer.drain()

    async def receive_some(self, max_bytes: int = 65536) -> bytes:
        data = await self._reader.read(max_bytes)
        if data and self._client:
            self.ack_now()
        return data

    async def aclose(self) -> None:
        # Not waiting for the close: this runs in tasks being cancelled.
        self._writer.close()

    # --- Listening: an accepted connection half-closes (a refused one's 503) ---

    async def send_eof(self) -> None:
        if self._writer.can_write_eof():
            self._writer.write_eof()

    def ack_now(self) -> None:
        sock = self._writer.get_extra_info("socket")
        if _QUICKACK is not None and sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, _QUICKACK, 1)


_BASE_LOOP_TIME = asyncio.BaseEventLoop.time


def _loop_time() -> float:
    """The running loop's ``time()``: the stock loops' is ``time.monotonic()``, read
    without the method call between.  Read from the instance: a ``time`` set on one
    loop (a test's clock) is the one its timers follow."""
    time_of = asyncio.get_running_loop().time
    try:
        stock = time_of.__func__ is _BASE_LOOP_TIME  # type: ignore[attr-defined]  # (no call)
    except AttributeError:  # a plain function set on the instance
        return time_of()
    return time.monotonic() if stock else time_of()


class _Deadline(contextlib.AbstractAsyncContextManager["_Deadline"]):
    """A :class:`~sansio_mcp.runtime.Deadline`: an :func:`asyncio.timeout` entered
    once, rescheduled by :meth:`set`."""

    __slots__ = ("_at", "_timeout")

    def __init__(self) -> None:
        self._timeout = asyncio.timeout(None)
        self._at: float | None = None

    def set(self, seconds: float) -> None:
        at = None if seconds == math.inf else _loop_time() + seconds
        if at != self._at and not self._timeout.expired():  # reached: spent
            self._at = at
            self._timeout.reschedule(at)

    @property
    def expired(self) -> bool:
        return self._timeout.expired()

    async def __aenter__(self) -> _Deadline:
        await self._timeout.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> bool:
        try:
            await self._timeout.__aexit__(*exc_info)
        except TimeoutError:
            return True  # reached: the block ends quietly
        return False


class AsyncioBackend:
    """The runtime's :class:`~sansio_mcp.runtime.Backend` on asyncio."""

    name = "asyncio"

    def run(self, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        async def main() -> T:
            return await fn(*args)

        return asyncio.run(main())

    def new_signal(self) -> Signal:
        return OneWaiterSignal()

    clock = staticmethod(_loop_time)

    def wall_clock(self) -> float:
        return time.time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    @asynccontextmanager
    async def fail_after(self, seconds: float) -> AsyncIterator[None]:
        try:
            async with asyncio.timeout(seconds):
                yield
        except TimeoutError:
            raise TimedOut(f"timed out after {seconds:g} s") from None

    @asynccontextmanager
    async def move_on_after(self, seconds: float) -> AsyncIterator[None]:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                yield

    def open_deadline(self) -> _Deadline:
        return _Deadline()

    @asynccontextmanager
    async def open_task_group(self) -> AsyncIterator[TaskGroup]:
        owner = asyncio.current_task()
        group = _TaskGroup(asyncio.TaskGroup(), owner)
        try:
            async with group._group:
                yield group
            if group.owner_cancelled:
                # Nothing awaited since cancel(): take the cancellation here, or it
                # would hit the caller's next await.
                await asyncio.sleep(0)
        except asyncio.CancelledError:
            # Our own cancel() ends the block quietly, like a cancelled nursery.
            if not group.owner_cancelled or owner is None or owner.uncancel() > 0:
                raise
        except BaseException:
            # The block took our cancel() and then failed with another error: the
            # cancellation was ours, so it is withdrawn, or the task's next task group
            # would end in a CancelledError nobody asked for.
            if group.owner_cancelled and owner is not None:
                owner.uncancel()
            raise
        finally:
            group._owner = None  # a cancel() from now on must not hit the task

    async def to_thread(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.to_thread(fn, *args)

    async def open_tcp_stream(
        self, host: str, port: int, *, tls: bool = False, ssl_context: Any = None
    ) -> TCPStream:
        context = (ssl_context or ssl.create_default_context()) if tls else None
        reader, writer = await asyncio.open_connection(host, port, ssl=context)
        read_in_small_chunks(writer.transport)
        sock = writer.get_extra_info("socket")
        if sock is not None:
            # asyncio sets TCP_NODELAY already; set here too, so every client stream
            # has it whatever asyncio's default becomes.
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return TCPStream(reader, writer, client=True)

    async def serve_tcp(
        self, handler: ConnectionHandler, host: str, port: int, *, on_bound: OnBound = None
    ) -> None:
        def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> Awaitable[None]:
            return handler(TCPStream(reader, writer))

        async with self.open_task_group() as group:
            await serve_tcp(group, accepted, host, port, on_bound)

    # Processes, pipes and timers ----------------------------------------------------

    async def shielded(self, step: Callable[[], Awaitable[T]]) -> T:
        return await shielded(step)

    def start_timer(self, group: TaskGroup, fn: Callable[[], None]) -> _Timer:
        return _Timer(fn)

    async def open_process(
        self, argv: Sequence[str], *, env: Mapping[str, str], cwd: str | None = None
    ) -> ChildProcess:
        child = await start_child(argv, env=env, cwd=cwd)
        process = child.process
        return ChildProcess(
            process,
            PipeStream(child.writer),
            PipeStream(connect=child.connect_output),
            PipeStream(reader=process.stderr),
            native=child,
        )

    async def open_stdio(self) -> PipeStream:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=2**24)
        read, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(os.dup(0), "rb", buffering=0)
        )
        transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, os.fdopen(os.dup(1), "wb", buffering=0)
        )
        writer = asyncio.StreamWriter(transport, protocol, reader, loop)
        return PipeStream(writer, reader, transport=read)


async def serve_tcp(
    group: TaskGroup,
    connection: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]],
    host: str,
    port: int,
    on_bound: OnBound,
) -> None:
    """Accept TCP connections until cancelled, each handled by a task in ``group``
    and then closed, so cancelling the server cancels every connection too
    (``asyncio.start_server`` alone leaves them running, unlike Trio's
    ``serve_tcp``).  The listener is closed without ``wait_closed``, which on newer
    Pythons waits for the connections the group has yet to cancel.  ``on_bound``
    (if given) gets the bound port."""

    async def guarded(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await connection(reader, writer)
        except Exception:
            # One broken connection must never take the server (the group) down.
            logger.exception("error while serving a connection; closing it")
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await writer.wait_closed()

    def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        read_in_small_chunks(writer.transport)
        group.start_soon(guarded, reader, writer)

    listener = await asyncio.start_server(accept, host, port)
    try:
        if on_bound is not None:
            on_bound(listener.sockets[0].getsockname()[1])
        await asyncio.get_running_loop().create_future()  # until cancelled
    finally:
        listener.close()


async def shielded(step: Callable[[], Awaitable[T]]) -> T:
    """Run ``step`` to completion even if the caller is cancelled meanwhile (however
    often: a task group cancels its tasks again as it ends); the cancellation is
    raised after it."""
    task = asyncio.ensure_future(step())
    cancelled: asyncio.CancelledError | None = None
    while not task.done():
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError as exc:
            if task.cancelled():
                raise
            cancelled = exc
    if cancelled is not None:
        raise cancelled
    return task.result()


# Pipes, processes and timers ------------------------------------------------------------


class OutputPipeProtocol(asyncio.streams.FlowControlMixin):
    """The protocol for a write pipe (``loop.connect_write_pipe``) that tells its
    runner when the pipe closes: its reader went away, even while nothing was
    being written (asyncio watches the pipe for that)."""

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        super().__init__(loop)
        self.on_lost: Callable[[], None] = lambda: None

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self.on_lost()


class Child:
    """A child process on pipes of our own rather than the subprocess streams: its
    output is handed to a protocol as it arrives (:meth:`connect_output`), with no
    reader task to wake for every message; ``writer`` is its input."""

    def __init__(
        self,
        process: asyncio.subprocess.Process,
        writer: asyncio.StreamWriter,
        stdin: asyncio.WriteTransport,
        output: Any,
    ) -> None:
        self.process = process
        self.writer = writer
        #: The child's input: give it to :func:`stop_process` (``stdin=``).
        self.stdin = stdin
        self._output = output

    async def connect_output(
        self, protocol: Callable[[], asyncio.BaseProtocol]
    ) -> tuple[asyncio.BaseTransport, Any]:
        """Connect the child's output to the protocol ``protocol()`` makes (an
        :class:`~asyncio_adapters._runner.AsyncioRunner` connector)."""
        return await asyncio.get_running_loop().connect_read_pipe(protocol, self._output)


async def start_child(
    command: Sequence[str], *, env: Mapping[str, str], cwd: str | os.PathLike[str] | None
) -> Child:
    """Start ``command`` (in a process group of its own) with its stdin and stdout
    on pipes of ours and its stderr on ``process.stderr`` (drain it)."""
    loop = asyncio.get_running_loop()
    child_stdin, to_child = os.pipe()
    from_child, child_stdout = os.pipe()
    try:
        process = await asyncio.create_subprocess_exec(
            *command,
            stdin=child_stdin,
            stdout=child_stdout,
            stderr=asyncio.subprocess.PIPE,
            env=dict(env),
            cwd=cwd,
            start_new_session=os.name != "nt",
        )
    except BaseException:
        os.close(to_child)
        os.close(from_child)
        raise
    finally:
        os.close(child_stdin)
        os.close(child_stdout)
    output = os.fdopen(from_child, "rb", buffering=0)
    try:
        transport, protocol = await loop.connect_write_pipe(
            OutputPipeProtocol, os.fdopen(to_child, "wb", buffering=0)
        )
    except BaseException:
        output.close()
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        raise
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    return Child(process, writer, transport, output)


class PipeStream:
    """One direction of a pipe as a :class:`~sansio_mcp.runtime.ByteStream`: a
    writer to send on, or a reader to receive from (made by ``connect`` on the
    first read, for a pipe whose reading may instead go to a protocol)."""

    def __init__(
        self,
        writer: asyncio.StreamWriter | None = None,
        reader: asyncio.StreamReader | None = None,
        connect: Callable[[Callable[[], asyncio.BaseProtocol]], Any] | None = None,
        transport: asyncio.BaseTransport | None = None,
    ) -> None:
        self._writer = writer
        self._reader = reader
        self._connect = connect
        #: What closing the pipe closes (besides ``writer``).
        self._transport = transport

    def send_nowait(self, data: bytes) -> int:
        writer = self._writer
        assert writer is not None, "a pipe to receive from"
        if writer.is_closing():
            raise BrokenPipeError("the pipe is closed")
        if writer.transport.get_write_buffer_size() > _READ_SIZE:
            return 0  # the peer is not keeping up: let the sender wait for it
        writer.write(data)
        return len(data)

    async def send_all(self, data: bytes) -> None:
        if not self.send_nowait(data):
            assert self._writer is not None
            self._writer.write(data)
        assert self._writer is not None
        await self._writer.drain()

    async def receive_some(self, max_bytes: int = 65536) -> bytes:
        if self._reader is None:
            assert self._connect is not None, "a pipe to send on"
            reader = asyncio.StreamReader(limit=2**24)
            self._transport, _ = await self._connect(lambda: asyncio.StreamReaderProtocol(reader))
            self._reader = reader
        try:
            return await self._reader.read(max_bytes)
        except (ConnectionError, OSError):
            return b""

    async def aclose(self) -> None:
        if self._writer is not None:
            self._writer.close()
        if self._transport is not None:
            self._transport.close()

    def ack_now(self) -> None:
        pass


class _Timer:
    """A loop callback (no task) that :meth:`set` moves."""

    def __init__(self, fn: Callable[[], None]) -> None:
        self._fn = fn
        self._loop = asyncio.get_running_loop()
        self._handle: asyncio.TimerHandle | None = None
        self._cancelled = False

    def set(self, delay: float) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        if delay != math.inf and not self._cancelled:
            self._handle = self._loop.call_later(delay, self._due)

    def _due(self) -> None:
        self._handle = None
        self._fn()

    def cancel(self) -> None:
        self._cancelled = True
        self.set(math.inf)


#: The primitives alone (what the runtime's loops in this adapter await).
PRIMITIVES = AsyncioBackend()
