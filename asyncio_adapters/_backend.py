"""The asyncio :class:`~sansio_mcp.runtime.Backend`: the runtime's primitives
on asyncio, plus this adapter's transports (what ``--backend asyncio`` runs on)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from sansio_mcp.runtime import Signal, TaskGroup, TimedOut

__all__ = ["PRIMITIVES", "OneWaiterSignal", "read_in_small_chunks", "AsyncioBackend", "TCPStream"]

T = TypeVar("T")


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

    def start_soon(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        async def call() -> None:
            await fn(*args)

        task = self._group.create_task(call())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def cancel(self) -> None:
        self.cancelled = True
        for task in list(self._tasks):
            task.cancel()
        if self._owner is not None:
            self._owner.cancel()


_QUICKACK: int | None = getattr(socket, "TCP_QUICKACK", None)


class TCPStream:
    """An asyncio TCP (or TLS) connection as a :class:`~sansio_mcp.runtime.ByteStream`."""

    __slots__ = ("_reader", "_writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer

    async def send_all(self, data: bytes) -> None:
        self._writer.write(data)
        await self._writer.drain()

    async def receive_some(self, max_bytes: int = 65536) -> bytes:
        return await self._reader.read(max_bytes)

    async def aclose(self) -> None:
        # Not waiting for the close: this runs in tasks being cancelled.
        self._writer.close()

    def ack_now(self) -> None:
        sock = self._writer.get_extra_info("socket")
        if _QUICKACK is not None and sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, _QUICKACK, 1)


class AsyncioBackend:
    """The runtime's :class:`~sansio_mcp.runtime.Backend` on asyncio."""

    name = "asyncio"

    def run(self, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        async def main() -> T:
            return await fn(*args)

        return asyncio.run(main())

    def new_signal(self) -> Signal:
        return OneWaiterSignal()

    def clock(self) -> float:
        return asyncio.get_running_loop().time()

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

    @asynccontextmanager
    async def open_task_group(self) -> AsyncIterator[TaskGroup]:
        owner = asyncio.current_task()
        group = _TaskGroup(asyncio.TaskGroup(), owner)
        try:
            async with group._group:
                yield group
        except asyncio.CancelledError:
            # Our own cancel() ends the block quietly, like a cancelled nursery.
            if not group.cancelled or owner is None or owner.uncancel() > 0:
                raise

    async def to_thread(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.to_thread(fn, *args)

    async def open_tcp_stream(
        self, host: str, port: int, *, tls: bool = False, ssl_context: Any = None
    ) -> TCPStream:
        context = (ssl_context or ssl.create_default_context()) if tls else None
        reader, writer = await asyncio.open_connection(host, port, ssl=context)
        read_in_small_chunks(writer.transport)
        return TCPStream(reader, writer)


#: The primitives alone (what the runtime's loops in this adapter await).
PRIMITIVES = AsyncioBackend()
