"""The Trio :class:`~sansio_mcp.runtime.Backend`: the runtime's primitives on
Trio, plus this adapter's transports (what ``--backend trio`` runs on)."""

from __future__ import annotations

import contextlib
import errno
import functools
import math
import os
import socket
import ssl
import stat
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import trio

from sansio_mcp.runtime import OnBound, Signal, TaskGroup, TimedOut
from sansio_mcp.runtime.hosting import ChildProcess, ConnectionHandler

__all__ = [
    "PRIMITIVES",
    "NurseryGroup",
    "OneWaiterSignal",
    "PipeReader",
    "PipeStream",
    "TCPStream",
    "TrioBackend",
    "child_process",
    "readable_waiter",
    "reader",
    "serve_tcp",
]

_READ_SIZE = 65536

_RUN: Any
try:  # Trio's run context (private): see _now
    from trio._core._run import GLOBAL_RUN_CONTEXT as _RUN
except ImportError:  # pragma: no cover - a Trio laid out otherwise
    _RUN = None

T = TypeVar("T")


class OneWaiterSignal:
    """A one-shot signal for the one task that waits on it (each request has its
    own): :class:`trio.Event` without its set of waiters and a closure per wait,
    since one is made for every request."""

    __slots__ = ("_set", "_task")

    def __init__(self) -> None:
        self._set = False
        self._task: trio.lowlevel.Task | None = None

    def set(self) -> None:
        if not self._set:
            self._set = True
            task = self._task
            if task is not None:
                self._task = None
                trio.lowlevel.reschedule(task)

    async def wait(self) -> None:
        if self._set:
            await trio.lowlevel.checkpoint()
            return
        assert self._task is None, "one task at a time waits on a signal"
        self._task = trio.lowlevel.current_task()
        await trio.lowlevel.wait_task_rescheduled(self._abort)

    def _abort(self, raise_cancel: Any) -> trio.lowlevel.Abort:
        self._task = None
        return trio.lowlevel.Abort.SUCCEEDED


class NurseryGroup:
    """A nursery as a :class:`~sansio_mcp.runtime.TaskGroup`."""

    def __init__(self, nursery: trio.Nursery) -> None:
        self._nursery = nursery

    def start_soon(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        self._nursery.start_soon(fn, *args)

    def start_cancellable(
        self, fn: Callable[[], Awaitable[Any]], on_done: Callable[[], None] | None = None
    ) -> trio.CancelScope:
        scope = trio.CancelScope()

        async def run() -> None:
            try:
                with scope:
                    await fn()
            finally:
                if on_done is not None:
                    on_done()

        self._nursery.start_soon(run, name=fn)  # named for what it runs, not the wrapper
        return scope

    def cancel(self) -> None:
        self._nursery.cancel_scope.cancel()


_QUICKACK: int | None = getattr(socket, "TCP_QUICKACK", None)
#: Direct writes (or reads) a stream makes in a row before one yields to the scheduler anyway.
DIRECT_WRITES_PER_YIELD = 32


class TCPStream:
    """A Trio TCP (or TLS) stream as a :class:`~sansio_mcp.runtime.ByteStream`;
    a broken connection is an :class:`OSError`, as on asyncio.  With ``client``
    (every stream :meth:`TrioBackend.open_tcp_stream` opens), each read that got
    bytes re-arms TCP_QUICKACK, so that no client leg (MCP, A2A, OAuth, ...) can
    forget it and stall 40 ms per answer on a delayed ACK."""

    __slots__ = (
        "_client",
        "_direct",
        "_direct_run",
        "_fileno",
        "_read_run",
        "_sending",
        "_socket",
        "_stream",
    )

    def __init__(
        self, stream: trio.abc.Stream, sock: trio.socket.SocketType, *, client: bool = False
    ) -> None:
        self._stream = stream
        self._socket = sock
        # The standard socket under Trio's (private ``_sock``), asked for its descriptor
        # directly: Trio's ``fileno`` is a Python method around the same call.
        self._fileno: Callable[[], int] = getattr(sock, "_sock", sock).fileno
        self._client = client and _QUICKACK is not None
        #: The socket written directly when it takes the bytes at once (plain TCP only).
        self._direct = isinstance(stream, trio.SocketStream)
        self._sending = False
        self._direct_run = 0
        self._read_run = 0

    async def send_all(self, data: bytes) -> None:
        # What the socket takes at once is written without a turn of the scheduler
        # (Trio's send_all always yields after a send, a pass per message); only a
        # send that must wait for room goes through the stream.  A cancelled task is
        # still stopped here, and every DIRECT_WRITES_PER_YIELD-th direct write yields,
        # so a loop that only sends cannot keep the other tasks from running.
        # The descriptor is read each time: once the socket is closed it is -1, never
        # a number the process may since have given to another connection.
        fd = self._fileno() if self._direct and not self._sending else -1
        if fd >= 0:
            await trio.lowlevel.checkpoint_if_cancelled()
            try:
                sent = os.write(fd, data)
            except BlockingIOError:
                sent = 0
            except OSError as exc:
                raise OSError(str(exc)) from exc
            if sent == len(data):
                self._direct_run += 1
                if self._direct_run >= DIRECT_WRITES_PER_YIELD:
                    self._direct_run = 0
                    await trio.lowlevel.cancel_shielded_checkpoint()
                return
            data = data[sent:]
        self._direct_run = 0
        self._sending = True
        try:
            await self._stream.send_all(data)
        except trio.BrokenResourceError as exc:
            raise OSError(str(exc)) from exc
        finally:
            self._sending = False

    async def receive_some(self, max_bytes: int = 65536) -> bytes:
        # A plain socket is read directly, as it is written (see send_all): what it
        # holds already is taken without a turn of the scheduler (Trio's receive_some
        # yields after every read that did not wait, a pass per message), every
        # DIRECT_WRITES_PER_YIELD-th such read yields all the same, and a read that
        # finds nothing waits for the socket as Trio does.  A cancelled task is still
        # stopped here.  The descriptor is read each time (see send_all).
        fd = self._fileno() if self._direct else -1
        if fd >= 0:
            data = await self._read_direct(fd, max_bytes)
        else:
            try:
                data = bytes(await self._stream.receive_some(max_bytes))
            except trio.BrokenResourceError as exc:
                raise OSError(str(exc)) from exc
        if data and self._client:
            self.ack_now()
        return data

    async def _read_direct(self, fd: int, max_bytes: int) -> bytes:
        await trio.lowlevel.checkpoint_if_cancelled()
        while True:
            try:
                data = os.read(fd, max_bytes)
            except BlockingIOError:
                self._read_run = 0
                await trio.lowlevel.wait_readable(fd)
                # Asked again: the stream may have been closed while the read was being
                # woken, and the number given to another connection since.
                fd = self._fileno()
                if fd < 0:
                    raise trio.ClosedResourceError("the stream was closed") from None
                continue
            except OSError as exc:
                raise OSError(str(exc)) from exc
            self._read_run += 1
            if self._read_run >= DIRECT_WRITES_PER_YIELD:
                self._read_run = 0
                await trio.lowlevel.cancel_shielded_checkpoint()
            return data

    async def aclose(self) -> None:
        await trio.aclose_forcefully(self._stream)

    # --- Listening: an accepted connection half-closes (a refused one's 503) ---

    async def send_eof(self) -> None:
        if isinstance(self._stream, trio.abc.HalfCloseableStream):
            try:
                await self._stream.send_eof()
            except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
                raise OSError(str(exc)) from exc

    def ack_now(self) -> None:
        if _QUICKACK is not None:
            with contextlib.suppress(OSError):
                self._socket.setsockopt(socket.IPPROTO_TCP, _QUICKACK, 1)


def _now() -> float:
    """``trio.current_time()``, read from the running clock itself: Trio's function is a
    KI-protection wrapper (a write to its frame's locals) and two forwarding calls
    around it, five Python calls per read where this is two."""
    try:
        now: float = _RUN.runner.clock.current_time()
    except AttributeError:  # not in a run (Trio's error), or a Trio laid out otherwise
        return trio.current_time()
    return now


def readable_waiter() -> Callable[[int], Awaitable[None]]:
    """``trio.lowlevel.wait_readable``, for a loop in the running task: the running
    I/O manager's own method (private), without the public function's frame and
    lookups around it, a coroutine fewer each time the loop waits (one wait per
    message read).  It waits, registers and is cancelled just the same; it is not
    marked KeyboardInterrupt-protected as the public one is, which only moves where
    a Ctrl-C that lands in its few lines is raised.  ``trio.lowlevel.wait_readable``
    itself outside a run or on a Trio laid out otherwise."""
    try:
        wait: Callable[[int], Awaitable[None]] = _RUN.runner.io_manager.wait_readable
    except AttributeError:
        return trio.lowlevel.wait_readable
    return wait


class _TimeLimit(contextlib.AbstractAsyncContextManager[None]):
    """``async with`` a Trio cancel scope that ends the block after ``seconds``
    (quietly, or with :class:`TimedOut` when ``fail``).  A class, not an
    ``asynccontextmanager``: an HTTP request goes through several, and a
    generator's frames cost more than the scope."""

    __slots__ = ("_fail", "_scope", "_seconds")

    def __init__(self, seconds: float, *, fail: bool) -> None:
        self._scope = trio.move_on_after(seconds)
        self._seconds = seconds
        self._fail = fail

    async def __aenter__(self) -> None:
        self._scope.__enter__()

    async def __aexit__(self, *exc_info: Any) -> bool:
        handled = bool(self._scope.__exit__(*exc_info))
        if self._fail and self._scope.cancelled_caught:
            raise TimedOut(f"timed out after {self._seconds:g} s") from None
        return handled


class _Deadline(contextlib.AbstractAsyncContextManager["_Deadline"]):
    """A :class:`~sansio_mcp.runtime.Deadline`: a cancel scope entered once whose
    deadline :meth:`set` moves (a heap entry, no scope to enter and leave)."""

    __slots__ = ("_at", "_scope")

    def __init__(self) -> None:
        self._scope = trio.CancelScope()
        self._at = math.inf

    def set(self, seconds: float) -> None:
        at = math.inf if seconds == math.inf else _now() + seconds
        if at != self._at and not self._scope.cancel_called:  # reached: spent
            self._at = at
            self._scope.deadline = at

    @property
    def expired(self) -> bool:
        return self._scope.cancel_called

    async def __aenter__(self) -> _Deadline:
        self._scope.__enter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> bool:
        return bool(self._scope.__exit__(*exc_info))


class TrioBackend:
    """The runtime's :class:`~sansio_mcp.runtime.Backend` on Trio."""

    name = "trio"

    def run(self, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        return trio.run(fn, *args)

    def new_signal(self) -> Signal:
        return OneWaiterSignal()

    clock = staticmethod(_now)

    def wall_clock(self) -> float:
        return time.time()

    async def sleep(self, seconds: float) -> None:
        await trio.sleep(seconds)

    def fail_after(self, seconds: float) -> contextlib.AbstractAsyncContextManager[None]:
        return _TimeLimit(seconds, fail=True)

    def move_on_after(self, seconds: float) -> contextlib.AbstractAsyncContextManager[None]:
        return _TimeLimit(seconds, fail=False)

    def open_deadline(self) -> _Deadline:
        return _Deadline()

    @asynccontextmanager
    async def open_task_group(self) -> AsyncIterator[TaskGroup]:
        async with trio.open_nursery() as nursery:
            yield NurseryGroup(nursery)

    async def to_thread(self, fn: Callable[..., T], *args: Any) -> T:
        return await trio.to_thread.run_sync(fn, *args)

    async def open_tcp_stream(
        self, host: str, port: int, *, tls: bool = False, ssl_context: Any = None
    ) -> TCPStream:
        tcp = await trio.open_tcp_stream(host, port)
        # Trio sets TCP_NODELAY already; set here too, so every client stream has it
        # whatever Trio's default becomes.
        tcp.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        stream: trio.abc.Stream = tcp
        if tls:
            context = ssl_context or ssl.create_default_context()
            stream = trio.SSLStream(tcp, context, server_hostname=host)
        return TCPStream(stream, tcp.socket, client=True)

    async def serve_tcp(
        self, handler: ConnectionHandler, host: str, port: int, *, on_bound: OnBound = None
    ) -> None:
        def accepted(stream: trio.SocketStream) -> Awaitable[None]:
            return handler(TCPStream(stream, stream.socket))

        await serve_tcp(accepted, host, port, on_bound)

    # Processes, pipes and timers ----------------------------------------------------

    async def shielded(self, step: Callable[[], Awaitable[T]]) -> T:
        with trio.CancelScope(shield=True):
            result = await step()
        await trio.lowlevel.checkpoint_if_cancelled()  # as on asyncio: at once, after it
        return result

    def start_timer(self, group: TaskGroup, fn: Callable[[], None]) -> _Timer:
        timer = _Timer(fn)
        group.start_soon(timer.run)
        return timer

    async def open_process(
        self, argv: Sequence[str], *, env: Mapping[str, str], cwd: str | None = None
    ) -> ChildProcess:
        process = await trio.lowlevel.open_process(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env),
            cwd=cwd,
            start_new_session=os.name != "nt",
        )
        return child_process(process)

    async def open_stdio(self) -> PipeStream:
        # Duplicates: closing the stream leaves fds 0 and 1 to the process.
        return PipeStream(trio.lowlevel.FdStream(os.dup(1)), trio.lowlevel.FdStream(os.dup(0)))


async def serve_tcp(
    handler: Callable[[trio.SocketStream], Awaitable[None]],
    host: str,
    port: int,
    on_bound: OnBound,
) -> None:
    """Accept TCP connections until cancelled, each handled by ``handler`` and then
    closed; ``on_bound`` (if given) gets the bound port."""
    listeners = await trio.open_tcp_listeners(port, host=host)
    if on_bound is not None:
        on_bound(listeners[0].socket.getsockname()[1])

    async def connection(stream: trio.SocketStream) -> None:
        try:
            await handler(stream)
        finally:
            await trio.aclose_forcefully(stream)

    await trio.serve_listeners(connection, listeners)


# Pipes, processes and timers ------------------------------------------------------------

_FdStream: Any = getattr(trio.lowlevel, "FdStream", None)  # Unix only


def as_pipe(stream: object) -> Any:
    """``stream`` if it is a pipe we may read and write directly, else None."""
    return stream if _FdStream is not None and isinstance(stream, _FdStream) else None


def is_fifo(pipe: Any) -> bool:
    """Whether ``pipe`` (or None) is the write end of a pipe (not a tty or a file)."""
    if pipe is None:
        return False
    try:
        return stat.S_ISFIFO(os.fstat(fileno_of(pipe)).st_mode)
    except (OSError, trio.ClosedResourceError):
        return False


def fileno_of(pipe: Any) -> int:
    fd: int = pipe.fileno()
    if fd < 0:  # closed: the number may already belong to another file
        raise trio.ClosedResourceError("the pipe is closed")
    return fd


class _Fileno:
    """A pipe's ``fd`` read through its ``fileno()`` (see :func:`fd_holder`)."""

    __slots__ = ("_pipe",)

    def __init__(self, pipe: Any) -> None:
        self._pipe = pipe

    @property
    def fd(self) -> int:
        fd: int = self._pipe.fileno()
        return fd


def fd_holder(pipe: Any) -> Any:
    """What holds ``pipe``'s file descriptor: an object whose ``fd`` is its number, -1
    once the pipe is closed (the number may then belong to another file).  Trio's
    FdStream keeps one (its ``fileno()`` reads it): read directly, every read and
    write of the pipe spares two calls; any other pipe's ``fileno()`` is asked."""
    holder = getattr(pipe, "_fd_holder", None)
    # Trio's holder also says ``closed`` (fd == -1): that is what makes its number safe
    # to read; a holder without it is not trusted.
    if (
        holder is not None
        and isinstance(getattr(holder, "fd", None), int)
        and isinstance(getattr(type(holder), "closed", None), property)
    ):
        return holder
    return _Fileno(pipe)


def reader(stream: trio.abc.ReceiveStream) -> Callable[[], Awaitable[bytes | bytearray]]:
    """How to read ``stream``: ``await read()`` gives its next bytes (``b""`` at
    its end).

    A pipe is read directly (see :class:`PipeReader`).
    """
    pipe = PipeReader(stream)
    if pipe.holder is None:
        return functools.partial(stream.receive_some, _READ_SIZE)
    return pipe.read


class PipeReader:
    """Reads a stream; a pipe directly: FdStream.receive_some yields to the scheduler
    and tries a read that fails before every wait, which in a sequential
    request/response exchange is two wasted steps per message."""

    __slots__ = ("_stream", "holder", "wait_first")

    def __init__(self, stream: trio.abc.ReceiveStream) -> None:
        self._stream = stream
        pipe = as_pipe(stream)
        #: What holds the pipe's file descriptor (see :func:`fd_holder`); None when
        #: ``stream`` is no pipe.
        self.holder: Any = fd_holder(pipe) if pipe is not None else None
        #: The last read did not fill the buffer: the pipe is most likely empty.
        self.wait_first = False

    async def read(self) -> bytes | bytearray:
        """The next bytes (``b""`` at the end)."""
        holder = self.holder
        if holder is None:
            return await self._stream.receive_some(_READ_SIZE)
        if self.wait_first:
            fd = holder.fd
            if fd < 0:  # closed: the number may already belong to another file
                raise trio.ClosedResourceError("the pipe is closed")
            await trio.lowlevel.wait_readable(fd)
        else:
            # More is likely waiting, but a peer that keeps the pipe full must not
            # keep every other task (timers, cancellation, signals) from running.
            await trio.lowlevel.checkpoint()
        while (data := self.read_ready()) is None:
            await trio.lowlevel.wait_readable(holder.fd)  # open: read_ready just said so
        return data

    def read_ready(self) -> bytes | None:
        """One read of the pipe, without waiting: its bytes (``b""`` at its end), or
        None when it has none now.  ClosedResourceError once it is closed,
        BrokenResourceError when reading fails."""
        fd = self.holder.fd
        if fd < 0:
            raise trio.ClosedResourceError("the pipe is closed")
        try:
            data = os.read(fd, _READ_SIZE)
        except BlockingIOError:
            return None
        except OSError as exc:
            if exc.errno == errno.EBADF:
                raise trio.ClosedResourceError("the pipe is closed") from None
            raise trio.BrokenResourceError from exc
        self.wait_first = len(data) < _READ_SIZE
        return data


class PipeStream:
    """A Trio stream (a pipe, a memory stream) as a :class:`~sansio_mcp.runtime.ByteStream`
    that any number of tasks may send on.  A pipe is written at once, without
    yielding, when nobody else is sending and it takes it all, and read as
    :func:`reader` reads; a broken or closed stream reads ``b""`` and fails to
    send with an :class:`OSError`."""

    def __init__(
        self, send: trio.abc.SendStream | None, receive: trio.abc.ReceiveStream | None = None
    ) -> None:
        self.send_stream = send
        self.receive_stream = receive
        pipe = as_pipe(send)
        #: What holds the pipe's file descriptor (see :func:`fd_holder`), or None.
        self._holder = fd_holder(pipe) if pipe is not None else None
        self._read = reader(receive) if receive is not None else None
        self._lock = trio.Lock()
        #: ``send_all`` calls holding or waiting for the lock (a plain count, read per
        #: message: cheaper than asking the lock).
        self._busy = 0

    def send_nowait(self, data: bytes) -> int:
        holder = self._holder
        if holder is None or self._busy:
            return 0
        fd = holder.fd
        if fd < 0:  # closed: the number may already belong to another file
            raise BrokenPipeError("the pipe is closed")
        try:
            return os.write(fd, data)
        except BlockingIOError:
            return 0

    async def send_all(self, data: bytes) -> None:
        assert self.send_stream is not None, "a stream to receive from"
        sent = self.send_nowait(data)
        if sent == len(data):
            return
        self._busy += 1
        try:
            async with self._lock:
                await self.send_stream.send_all(data[sent:])
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            raise BrokenPipeError(str(exc) or "the stream is closed") from exc
        finally:
            self._busy -= 1

    async def receive_some(self, max_bytes: int = 65536) -> bytes:
        assert self._read is not None, "a stream to send on"
        try:
            return bytes(await self._read())
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return b""

    async def aclose(self) -> None:
        for stream in (self.send_stream, self.receive_stream):
            if stream is not None:
                await trio.aclose_forcefully(stream)

    def ack_now(self) -> None:
        pass


def child_process(process: trio.Process) -> ChildProcess:
    """``process`` (started with its three pipes) as the runtime's :class:`Process`."""
    assert process.stdin and process.stdout and process.stderr
    return ChildProcess(
        process,
        PipeStream(process.stdin),
        PipeStream(None, process.stdout),
        PipeStream(None, process.stderr),
    )


class _Timer:
    """A task that sleeps in a cancel scope whose deadline :meth:`set` moves (no
    wake-up and no new scope when the earliest deadline changes)."""

    def __init__(self, fn: Callable[[], None]) -> None:
        self._fn = fn
        self._deadline = math.inf
        self._scope: trio.CancelScope | None = None
        self._stopped = trio.CancelScope()

    def set(self, delay: float) -> None:
        self._deadline = _now() + delay
        if self._scope is not None:
            self._scope.deadline = self._deadline

    def cancel(self) -> None:
        self._stopped.cancel()

    async def run(self) -> None:
        with self._stopped:
            while True:
                with trio.CancelScope(deadline=self._deadline) as self._scope:
                    await trio.sleep_forever()
                self._scope = None
                if _now() >= self._deadline:
                    self._deadline = math.inf
                    self._fn()


#: The primitives alone (what the runtime's loops in this adapter await).
PRIMITIVES = TrioBackend()
