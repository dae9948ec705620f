"""The Trio :class:`~sansio_mcp.runtime.Backend`: the runtime's primitives on
Trio, plus this adapter's transports (what ``--backend trio`` runs on)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from functools import partial
from typing import Any, TypeVar

import trio

from sansio_mcp.runtime import ClientAPI, Server, Signal, TaskGroup, TimedOut

from ._runner import OneWaiterSignal

__all__ = ["BACKEND", "TrioBackend"]

T = TypeVar("T")


class _Nursery:
    """A nursery as a :class:`~sansio_mcp.runtime.TaskGroup`."""

    def __init__(self, nursery: trio.Nursery) -> None:
        self._nursery = nursery

    def start_soon(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        self._nursery.start_soon(fn, *args)

    def cancel(self) -> None:
        self._nursery.cancel_scope.cancel()


class _TCPStream:
    """A :class:`trio.SocketStream` as a :class:`~sansio_mcp.runtime.ByteStream`."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self._stream = stream

    async def send_all(self, data: bytes) -> None:
        await self._stream.send_all(data)

    async def receive_some(self, max_bytes: int = 65536) -> bytes:
        return bytes(await self._stream.receive_some(max_bytes))

    async def aclose(self) -> None:
        await self._stream.aclose()


class TrioBackend:
    """The runtime's :class:`~sansio_mcp.runtime.TransportBackend` on Trio."""

    name = "trio"

    def run(self, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        return trio.run(fn, *args)

    def new_signal(self) -> Signal:
        return OneWaiterSignal()

    def clock(self) -> float:
        return trio.current_time()

    async def sleep(self, seconds: float) -> None:
        await trio.sleep(seconds)

    @asynccontextmanager
    async def fail_after(self, seconds: float) -> AsyncIterator[None]:
        try:
            with trio.fail_after(seconds):
                yield
        except trio.TooSlowError:
            raise TimedOut(f"timed out after {seconds:g} s") from None

    @asynccontextmanager
    async def move_on_after(self, seconds: float) -> AsyncIterator[None]:
        with trio.move_on_after(seconds):
            yield

    @asynccontextmanager
    async def open_task_group(self) -> AsyncIterator[TaskGroup]:
        async with trio.open_nursery() as nursery:
            yield _Nursery(nursery)

    async def to_thread(self, fn: Callable[..., T], *args: Any) -> T:
        return await trio.to_thread.run_sync(fn, *args)

    async def open_tcp_stream(self, host: str, port: int) -> _TCPStream:
        return _TCPStream(await trio.open_tcp_stream(host, port))

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

        serves: dict[str, Callable[..., Awaitable[None]]] = {
            "http": serve_http,
            "sse": serve_sse,
            "ws": serve_ws,
        }
        async with trio.open_nursery() as nursery:
            bound = await nursery.start(partial(serves[transport], server, host=host, port=port))
            if on_bound is not None:
                on_bound(bound)


#: The one Trio backend.
BACKEND = TrioBackend()
