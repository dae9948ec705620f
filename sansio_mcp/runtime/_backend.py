"""What the runtime awaits: the few event-loop primitives a backend supplies.

The runtime (hosts, driver, clients, the bridge runner) is written once against
these protocols; ``trio_adapters.BACKEND`` and ``asyncio_adapters.BACKEND``
implement them.  Nothing here imports an event loop.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from ._primitives import Cancellable, Signal

if TYPE_CHECKING:
    from ._client import ClientAPI
    from ._server import Server

__all__ = [
    "Backend",
    "ByteStream",
    "Cancellable",
    "Connection",
    "ConnectionHandler",
    "Deadline",
    "OnBound",
    "Pipe",
    "Process",
    "Signal",
    "TaskGroup",
    "TimedOut",
    "Timer",
    "TransportBackend",
]

T = TypeVar("T")


class TimedOut(Exception):
    """A block run under :meth:`Backend.fail_after` took longer than allowed."""


class ByteStream(Protocol):
    """A bidirectional byte stream (a TCP connection)."""

    async def send_all(self, data: bytes) -> None:
        """Send every byte of ``data``."""
        ...

    async def receive_some(self, max_bytes: int = 65536) -> bytes:
        """At least one byte, at most ``max_bytes``; ``b""`` once the peer closed."""
        ...

    async def aclose(self) -> None:
        """Close the stream at once, without a graceful TLS goodbye (idempotent)."""
        ...

    def ack_now(self) -> None:
        """Acknowledge what arrived at once (TCP_QUICKACK, where there is one): on a
        kept-alive connection Linux delays ACKs, and a server that holds its next
        write until the last one is ACKed (Nagle) would stall each answer 40 ms.
        The streams :meth:`Backend.open_tcp_stream` opens do it after every read that
        got bytes, so that no client leg can forget it."""
        ...


class Connection(ByteStream, Protocol):
    """An accepted TCP connection, as the adapters' listeners hand it to the
    runtime's services."""

    async def send_eof(self) -> None:
        """End our side of the connection, still reading the peer's (TCP half-close)."""
        ...


#: Serves one accepted connection (:meth:`Backend.serve_tcp` closes it afterwards).
ConnectionHandler = Callable[[Connection], Awaitable[None]]
#: Gets the port a listener bound (None: nobody asks).
OnBound = Callable[[int], object] | None


class TaskGroup(Protocol):
    """Tasks that end together: leaving the group waits for them, and a failing
    one cancels the rest."""

    def start_soon(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        """Run ``fn(*args)`` in a new task of the group."""
        ...

    def start_cancellable(
        self, fn: Callable[[], Awaitable[Any]], on_done: Callable[[], None] | None = None
    ) -> Cancellable:
        """Run ``fn()`` in a new task of the group that ``cancel()`` on the result
        ends quietly (the rest of the group goes on); ``on_done()`` once it has
        ended, however (even cancelled before it began)."""
        ...

    def cancel(self) -> None:
        """Cancel every task of the group (and the body of its ``async with``)."""
        ...


class Deadline(Protocol):
    """A time limit on the block of :meth:`Backend.open_deadline` that moves: set
    again for each wait of a loop (an HTTP connection's idle time, its request,
    its answer's head) where a scope per wait would cost its entry and exit each
    time.  Reaching it ends the block quietly, and for good."""

    def set(self, seconds: float) -> None:
        """End the block ``seconds`` from now instead (``math.inf``: not at all); once
        reached it stays reached (see :attr:`expired`)."""
        ...

    @property
    def expired(self) -> bool:
        """Whether it has been reached: it ends the block (in a ``finally`` or an
        ``except`` inside it), or has ended it (after)."""
        ...


# Processes, pipes and timers (what the bridge runner, the A2E client and the stdio
# transport need of a backend) ------------------------------------------------------


class Timer(Protocol):
    """Calls one function (without arguments, in no task of its own) when its
    time comes: one time limit that moves, as a host's earliest deadline does."""

    def set(self, delay: float) -> None:
        """Call the function ``delay`` seconds from now instead of when it was due
        (``math.inf``: not at all until set again)."""
        ...

    def cancel(self) -> None:
        """Never call it again (idempotent)."""
        ...


@runtime_checkable
class Pipe(ByteStream, Protocol):
    """A :class:`ByteStream` that can also send without waiting (a pipe, an asyncio
    transport): :class:`~sansio_mcp.runtime._sender.Sender` writes through it at once."""

    def send_nowait(self, data: bytes) -> int:
        """Send what goes at once, without waiting; how many bytes went (0 while
        another send is under way).  A broken stream raises :class:`OSError`."""
        ...


class Process(Protocol):
    """A child process in a process group of its own, its stdin, stdout and
    stderr on pipes (``stdin`` only sends, the other two only receive; a pipe
    whose peer is gone reads ``b""`` or fails to send with an :class:`OSError`)."""

    pid: int
    stdin: ByteStream
    stdout: ByteStream
    stderr: ByteStream

    @property
    def returncode(self) -> int | None:
        """The exit code once the process has ended (a negative signal number)."""
        ...

    async def wait(self) -> int:
        """Wait for the process to end; its exit code."""
        ...

    def send_signal(self, sig: int) -> None:
        """Send ``sig`` to the process alone."""
        ...


# -----------------------------------------------------------------------------------


class Backend(Protocol):
    """The event-loop primitives: tasks, time limits, sleeping, signals, the
    clock, threads, TCP connections, processes and timers."""

    #: ``"trio"`` or ``"asyncio"``: what ``--backend`` calls it.
    name: str

    def run(self, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        """Run ``fn(*args)`` on a new event loop until it returns."""
        ...

    def new_signal(self) -> Signal:
        """A fresh :class:`Signal`."""
        ...

    def clock(self) -> float:
        """The event loop's monotonic clock, in seconds."""
        ...

    def wall_clock(self) -> float:
        """Seconds since the epoch (what JWTs and token lifetimes are dated on)."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Sleep for ``seconds`` (``math.inf``: until cancelled)."""
        ...

    def fail_after(self, seconds: float) -> AbstractAsyncContextManager[None]:
        """Raise :class:`TimedOut` if the block takes longer than ``seconds``."""
        ...

    def move_on_after(self, seconds: float) -> AbstractAsyncContextManager[None]:
        """Quietly cancel the block after ``seconds``."""
        ...

    def open_deadline(self) -> AbstractAsyncContextManager[Deadline]:
        """A :class:`Deadline` on the ``async with`` block, unset."""
        ...

    def open_task_group(self) -> AbstractAsyncContextManager[TaskGroup]:
        """A :class:`TaskGroup` for the ``async with`` block."""
        ...

    async def to_thread(self, fn: Callable[..., T], *args: Any) -> T:
        """Run the blocking ``fn(*args)`` in a worker thread."""
        ...

    async def open_tcp_stream(
        self, host: str, port: int, *, tls: bool = False, ssl_context: Any = None
    ) -> ByteStream:
        """A TCP connection to ``host:port``; with ``tls``, wrapped in TLS with
        ``ssl_context`` (an :class:`ssl.SSLContext`; None for the default one)."""
        ...

    async def serve_tcp(
        self, handler: ConnectionHandler, host: str, port: int, *, on_bound: OnBound = None
    ) -> None:
        """Accept TCP connections on ``host:port`` until cancelled, each handled by
        ``handler`` in a task of its own and then closed; ``on_bound`` gets the
        bound port (``port=0``: any free one)."""
        ...

    # Processes, pipes and timers ----------------------------------------------------

    async def shielded(self, step: Callable[[], Awaitable[T]]) -> T:
        """Run ``step()`` to its end even if the caller is cancelled meanwhile (the
        cancellation takes effect after it)."""
        ...

    def start_timer(self, group: TaskGroup, fn: Callable[[], None]) -> Timer:
        """A :class:`Timer` calling ``fn``, unset; it lives as long as ``group``
        (where the backend needs a task for it)."""
        ...

    async def open_process(
        self, argv: Sequence[str], *, env: Mapping[str, str], cwd: str | None = None
    ) -> Process:
        """Start ``argv`` (a new session: its own process group) with ``env`` as its
        whole environment, in ``cwd``; :class:`FileNotFoundError` if there is no such
        program."""
        ...

    async def open_stdio(self) -> Pipe:
        """This process's own stdin (to receive from) and stdout (to send on), as
        one stream; closing it leaves the process's own descriptors open."""
        ...


class TransportBackend(Backend, Protocol):
    """A :class:`Backend` with its adapter's transports: a client for a command
    or URL, and a server on a transport (what the command line needs)."""

    def connect(
        self, command: Sequence[str], url: str | None, transport: str | None, **options: Any
    ) -> AbstractAsyncContextManager[ClientAPI]:
        """A client for a stdio command, or a URL (HTTP, legacy SSE, WebSocket);
        ``options`` are the ``open_*_client`` keywords."""
        ...

    async def serve(
        self,
        server: Server,
        transport: str,
        host: str,
        port: int,
        *,
        on_bound: Callable[[int], None] | None = None,
    ) -> None:
        """Serve ``server`` on ``transport`` (stdio, http, sse, ws) until cancelled;
        ``on_bound`` gets the port a network listener bound."""
        ...

    async def until_stopped(self, fn: Callable[..., Awaitable[None]], *args: Any) -> None:
        """Run ``fn(*args)`` until it returns or SIGTERM/SIGINT ends it (cleanly)."""
        ...
