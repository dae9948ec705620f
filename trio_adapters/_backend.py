"""The Trio :class:`~sansio_mcp.runtime.Backend`: the runtime's primitives on
Trio, plus this adapter's transports (what ``--backend trio`` runs on)."""

from __future__ import annotations

import contextlib
import socket
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import trio

from sansio_mcp.runtime import Signal, TaskGroup, TimedOut

__all__ = ["PRIMITIVES", "OneWaiterSignal", "TCPStream", "TrioBackend"]

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


class _Nursery:
    """A nursery as a :class:`~sansio_mcp.runtime.TaskGroup`."""

    def __init__(self, nursery: trio.Nursery) -> None:
        self._nursery = nursery

    def start_soon(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        self._nursery.start_soon(fn, *args)

    def cancel(self) -> None:
        self._nursery.cancel_scope.cancel()


_QUICKACK: int | None = getattr(socket, "TCP_QUICKACK", None)


class TCPStream:
    """A Trio TCP (or TLS) stream as a :class:`~sansio_mcp.runtime.ByteStream`;
    a broken connection is an :class:`OSError`, as on asyncio."""

    __slots__ = ("_socket", "_stream")

    def __init__(self, stream: trio.abc.Stream, sock: trio.socket.SocketType) -> None:
        self._stream = stream
        self._socket = sock

    async def send_all(self, data: bytes) -> None:
        try:
            await self._stream.send_all(data)
        except trio.BrokenResourceError as exc:
            raise OSError(str(exc)) from exc

    async def receive_some(self, max_bytes: int = 65536) -> bytes:
        try:
            return bytes(await self._stream.receive_some(max_bytes))
        except trio.BrokenResourceError as exc:
            raise OSError(str(exc)) from exc

    async def aclose(self) -> None:
        await trio.aclose_forcefully(self._stream)

    def ack_now(self) -> None:
        if _QUICKACK is not None:
            with contextlib.suppress(OSError):
                self._socket.setsockopt(socket.IPPROTO_TCP, _QUICKACK, 1)


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


class TrioBackend:
    """The runtime's :class:`~sansio_mcp.runtime.Backend` on Trio."""

    name = "trio"

    def run(self, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        return trio.run(fn, *args)

    def new_signal(self) -> Signal:
        return OneWaiterSignal()

    def clock(self) -> float:
        return trio.current_time()

    def wall_clock(self) -> float:
        return time.time()

    async def sleep(self, seconds: float) -> None:
        await trio.sleep(seconds)

    def fail_after(self, seconds: float) -> contextlib.AbstractAsyncContextManager[None]:
        return _TimeLimit(seconds, fail=True)

    def move_on_after(self, seconds: float) -> contextlib.AbstractAsyncContextManager[None]:
        return _TimeLimit(seconds, fail=False)

    @asynccontextmanager
    async def open_task_group(self) -> AsyncIterator[TaskGroup]:
        async with trio.open_nursery() as nursery:
            yield _Nursery(nursery)

    async def to_thread(self, fn: Callable[..., T], *args: Any) -> T:
        return await trio.to_thread.run_sync(fn, *args)

    async def open_tcp_stream(
        self, host: str, port: int, *, tls: bool = False, ssl_context: Any = None
    ) -> TCPStream:
        tcp = await trio.open_tcp_stream(host, port)
        stream: trio.abc.Stream = tcp
        if tls:
            context = ssl_context or ssl.create_default_context()
            stream = trio.SSLStream(tcp, context, server_hostname=host)
        return TCPStream(stream, tcp.socket)


#: The primitives alone (what the runtime's loops in this adapter await).
PRIMITIVES = TrioBackend()
