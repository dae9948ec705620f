"""The asyncio :class:`~sansio_mcp.runtime.Backend`: the runtime's primitives
on asyncio, plus this adapter's transports (what ``--backend asyncio`` runs on)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, TypeVar

from sansio_mcp.runtime import ClientAPI, Server, Signal, TaskGroup, TimedOut

from ._runner import OneWaiterSignal

__all__ = ["BACKEND", "AsyncioBackend"]

T = TypeVar("T")


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


class _TCPStream:
    """An asyncio connection as a :class:`~sansio_mcp.runtime.ByteStream`."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer

    async def send_all(self, data: bytes) -> None:
        self._writer.write(data)
        await self._writer.drain()

    async def receive_some(self, max_bytes: int = 65536) -> bytes:
        return await self._reader.read(max_bytes)

    async def aclose(self) -> None:
        self._writer.close()
        with contextlib.suppress(OSError):
            await self._writer.wait_closed()


class AsyncioBackend:
    """The runtime's :class:`~sansio_mcp.runtime.TransportBackend` on asyncio."""

    name = "asyncio"

    def run(self, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        async def main() -> T:
            return await fn(*args)

        return asyncio.run(main())

    def new_signal(self) -> Signal:
        return OneWaiterSignal()

    def clock(self) -> float:
        return asyncio.get_running_loop().time()

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

    async def open_tcp_stream(self, host: str, port: int) -> _TCPStream:
        reader, writer = await asyncio.open_connection(host, port)
        return _TCPStream(reader, writer)

    def connect(
        self, command: Sequence[str], url: str | None, transport: str | None, **options: Any
    ) -> AbstractAsyncContextManager[ClientAPI]:
        if url is None:
            from .client import open_stdio_client

            return open_stdio_client(command, **options)
        if url.startswith(("ws://", "wss://")):
            from .websocket import open_ws_client

            return open_ws_client(url, **options)
        if transport == "sse":
            from .sse import open_sse_client

            return open_sse_client(url, **options)
        from .http_client import open_http_client

        return open_http_client(url, **options)

    async def serve(
        self,
        server: Server,
        transport: str,
        host: str,
        port: int,
        *,
        on_bound: Callable[[int], None] | None = None,
    ) -> None:
        if transport == "stdio":
            from .server import serve_stdio

            await serve_stdio(server)
            return
        from .http_server import serve_http
        from .sse import serve_sse
        from .websocket import serve_ws

        serves: dict[str, Callable[..., Coroutine[Any, Any, None]]] = {
            "http": serve_http,
            "sse": serve_sse,
            "ws": serve_ws,
        }
        started: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        task = asyncio.create_task(serves[transport](server, host=host, port=port, started=started))
        try:
            bound = await started
            if on_bound is not None:
                on_bound(bound)
            await task
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


#: The one asyncio backend.
BACKEND = AsyncioBackend()
