"""What the runtime awaits: the few event-loop primitives a backend supplies.

The runtime (hosts, driver, clients, the bridge runner) is written once against
these protocols; ``trio_adapters.BACKEND`` and ``asyncio_adapters.BACKEND``
implement them.  Nothing here imports an event loop.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ._primitives import Cancellable, Signal

if TYPE_CHECKING:
    from ._client import ClientAPI
    from ._server import Server

__all__ = [
    "Backend",
    "ByteStream",
    "Cancellable",
    "Signal",
    "TaskGroup",
    "TimedOut",
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
        write until the last one is ACKed (Nagle) would stall each answer 40 ms."""
        ...


class TaskGroup(Protocol):
    """Tasks that end together: leaving the group waits for them, and a failing
    one cancels the rest."""

    def start_soon(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        """Run ``fn(*args)`` in a new task of the group."""
        ...

    def cancel(self) -> None:
        """Cancel every task of the group (and the body of its ``async with``)."""
        ...


class Backend(Protocol):
    """The event-loop primitives: tasks, time limits, sleeping, signals, the
    clock, threads and TCP connections."""

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
        """Sleep for ``seconds``."""
        ...

    def fail_after(self, seconds: float) -> AbstractAsyncContextManager[None]:
        """Raise :class:`TimedOut` if the block takes longer than ``seconds``."""
        ...

    def move_on_after(self, seconds: float) -> AbstractAsyncContextManager[None]:
        """Quietly cancel the block after ``seconds``."""
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
